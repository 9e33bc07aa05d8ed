// `msomni job --scheduler-info FILE --id NAME --class critical|regular|best-effort --gpus N
//  [--gpus-per-replica R] [--min-replicas M] [--run-dir DIR] [--scratch-dir DIR] [--reconnect-s S]
//  -- COMMAND [ARGS...]`:
// joins msomni-sched over UCX (address and token from its info file) and runs COMMAND under
// the scheduler's decisions (see job_runner.hpp). Exit: the command's exit code when it
// ran to its end, 1 when the scheduler is unreachable or went away for good, 2 usage,
// 3 rejected.
#include "commands.hpp"
#include "job_runner.hpp"

#include "scheduler_client.hpp"
#include "config/config_schema.hpp"
#include "core/stop_signal.hpp"

#include <caf/send.hpp>
#include <unistd.h>

#include <fstream>
#include <future>
#include <iostream>

namespace msomni::cli {

namespace {

using namespace std::chrono_literals;

int job_usage(std::ostream& os, int code) {
  os << "usage: msomni job --scheduler-info FILE --id NAME --class critical|regular|best-effort --gpus N\n"
        "                  [--gpus-per-replica R] [--min-replicas M] [--run-dir DIR] [--scratch-dir DIR]\n"
        "                  [--reconnect-s S] [--resize-in-place yes|no]\n"
        "                  -- COMMAND [ARGS...]\n"
        "  --scheduler-info  the file msomni-sched wrote (\"ADDRESS TOKEN\")\n"
        "  --run-dir         the command's run directory (msomni-run's --run-dir): checkpoints/latest\n"
        "                    gives the step a preempted job reports, metrics.jsonl the step times\n"
        "                    and data waits that feed the scheduler's idle-window predictor\n"
        "  --scratch-dir     the command gets MSOMNI_SCRATCH_DIR=DIR/NAME, created at each start and\n"
        "                    removed whenever the command ends (a preempted job leaves no scratch)\n"
        "  --reconnect-s S   when msomni-sched goes away, the command keeps running and the job\n"
        "                    rejoins a restarted one (found through the info file) for up to S\n"
        "                    seconds (default 300); then, or with 0 at once, the command is\n"
        "                    stopped (SIGTERM) and the job ends with 1\n"
        "  --resize-in-place yes|no  COMMAND is msomni-run with --run-dir DIR (give msomni job the\n"
        "                    same --run-dir): it starts with the scheduler's replicas (--set\n"
        "                    elasticity.replicas=N is added), and shrink/grow notices become\n"
        "                    scale-down/scale-up requests to its control endpoint, applied at its\n"
        "                    next barrier, instead of a restart (default no; a failed request\n"
        "                    falls back to the restart)\n";
  return code;
}

}  // namespace

int run_job(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  job_spec spec;
  std::string info;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") return job_usage(out, exit_ok);
    if (i + 1 >= args.size()) {
      err << "msomni job: " << a << " needs a value\n";
      return job_usage(err, exit_usage);
    }
    const std::string& v = args[++i];
    try {
      if (a == "--scheduler-info") info = v;
      else if (a == "--id") spec.id = v;
      else if (a == "--class") {
        if (v == "critical") spec.job_class = 0;
        else if (v == "regular") spec.job_class = 1;
        else if (v == "best-effort" || v == "best_effort") spec.job_class = 2;
        else throw std::invalid_argument(v);
      } else if (a == "--gpus") spec.gpus = static_cast<uint32_t>(std::stoul(v));
      else if (a == "--gpus-per-replica") spec.gpus_per_replica = static_cast<uint32_t>(std::stoul(v));
      else if (a == "--min-replicas") spec.min_replicas = static_cast<uint32_t>(std::stoul(v));
      else if (a == "--run-dir") spec.run_dir = v;
      else if (a == "--scratch-dir") spec.scratch_dir = v;
      else if (a == "--resize-in-place") {
        if (v != "yes" && v != "no") throw std::invalid_argument(v);
        spec.resize_in_place = v == "yes";
      } else if (a == "--reconnect-s") {
        spec.reconnect_s = std::stod(v);
        if (!(spec.reconnect_s >= 0)) throw std::invalid_argument(v);
      }
      else {
        err << "msomni job: unknown option " << a << "\n";
        return job_usage(err, exit_usage);
      }
    } catch (const std::exception&) {
      err << "msomni job: " << a << " " << v << ": not a valid value\n";
      return exit_usage;
    }
  }
  spec.command.assign(args.begin() + static_cast<std::ptrdiff_t>(std::min(i, args.size())), args.end());
  if (info.empty() || spec.id.empty() || spec.gpus == 0 || spec.command.empty()) {
    err << "msomni job: --scheduler-info, --id, a positive --gpus and a command after -- are required\n";
    return job_usage(err, exit_usage);
  }
  // The id names the job's scratch directory (SCRATCH/ID), which msomni job removes.
  if (const auto problem = config::plain_name_problem(spec.id); !problem.empty()) {
    err << "msomni job: --id: the job id " << problem << "\n";
    return exit_usage;
  }
  const auto ep = read_scheduler_info(info);
  if (!ep) {
    err << "msomni job: " << info << ": expected \"ADDRESS TOKEN\" (written by msomni-sched)\n";
    return exit_usage;
  }
  scheduler_client client(*ep, "job-" + spec.id + "-" + std::to_string(::getpid()));
  if (!client.join(20s)) {
    err << "msomni job: msomni-sched at " << ep->address << " never answered\n";
    return exit_failed;
  }
  std::promise<int> result;
  job_runner_env env;
  env.scheduler = client.scheduler();
  env.find_scheduler = [&client, info] { return client.reconnect(info, 500ms); };
  env.find_control = [&client](const std::string& run_dir) { return client.control_of(run_dir, 2s); };
  auto runner = spawn_job_runner(client.system(), spec, std::move(env),
                                 [&result](int code, const std::string&) { result.set_value(code); });
  stop_signal::install();
  auto fut = result.get_future();
  while (fut.wait_for(100ms) != std::future_status::ready) {
    if (stop_signal::flag()) {  // the command is killed with the runner; the scheduler sees the job go
      caf::anon_send_exit(runner, caf::exit_reason::user_shutdown);
      err << "msomni job: interrupted\n";
      return exit_failed;
    }
  }
  return fut.get();
}

}  // namespace msomni::cli
