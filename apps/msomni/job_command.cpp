// `msomni job --scheduler-info FILE --id NAME [options] -- COMMAND [ARGS...]` (see --help):
// joins msomni-sched over UCX (address and token from its info file) and runs COMMAND under
// the scheduler's decisions (see job_runner.hpp). Exit: the command's exit code when it
// ran to its end (msomni-run's 5: it stopped with a checkpoint, reported "stopped", listed by
// sched-status as stopped, and resumed from that step by the same job run again), 1 when the
// scheduler is unreachable or went away for good, 2 usage, 3 rejected. Interrupted (Ctrl-C's
// SIGINT, or SIGTERM), it passes the same signal to the command's group and ends with the
// command's code when that stopped with a checkpoint (msomni-run: 5 for SIGINT, 4 for SIGTERM),
// else 1.
#include "commands.hpp"
#include "job_runner.hpp"

#include "scheduler_client.hpp"
#include "config/config_schema.hpp"
#include "core/command_line.hpp"
#include "core/stop_signal.hpp"

#include <caf/send.hpp>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <future>
#include <iostream>

namespace msomni::cli {

namespace {

using namespace std::chrono_literals;

namespace limits = config::limits;

// How long a job waits for a restarted msomni-sched, at most.
constexpr limits::range<double> reconnect_s_limit{0.0, 7 * 86400.0};
// Device memory a guest declares it needs per GPU (GB), at most.
constexpr limits::range<double> memory_gb_limit{0.0, 100000.0};

void add_flags(CLI::App& app, job_spec& spec, std::string& info, double& memory_gb) {
  using command_line::add_number;
  using command_line::within;
  app.add_option("--scheduler-info", info, "the file msomni-sched wrote (\"ADDRESS TOKEN\")")
      ->type_name("FILE")
      ->required();
  app.add_option("--id", spec.id, "the job's name (one plain path component: it names its scratch directory)")
      ->type_name("NAME")
      ->required()
      ->check([](const std::string& id) {
        const auto problem = config::plain_name_problem(id);
        return problem.empty() ? problem : "the job id " + problem;
      });
  app.add_option_function<std::string>(
         "--class",
         [&spec](const std::string& v) { spec.job_class = v == "critical" ? 0 : v == "regular" ? 1 : 2; },
         "critical | regular | best-effort")
      ->check(CLI::IsMember({"critical", "regular", "best-effort", "best_effort"}))
      ->default_str("regular");
  add_number(app, "--gpus", spec.gpus, limits::cluster::gpus, "GPUs the job asks for");
  app.add_option("--gpus-per-replica", spec.gpus_per_replica,
                 "GPUs of one replica, so that the scheduler may shrink and grow the job by whole replicas "
                 "(0: the whole job is one)")
      ->type_name("R")
      ->transform(within<int64_t>(0, limits::cluster::gpus.max))
      ->capture_default_str();
  app.add_option("--min-replicas", spec.min_replicas, "the fewest replicas the job runs with")
      ->type_name("M")
      ->transform(within(limits::elasticity::replicas))
      ->capture_default_str();
  app.add_option("--run-dir", spec.run_dir,
                 "the command's run directory (msomni-run's --run-dir): checkpoints/latest gives the step a "
                 "preempted job reports (else, for a command that keeps its checkpoints its own way, the step of the "
                 "newest metrics.jsonl line with checkpoint_ms > 0; without either the step is reported unknown), "
                 "metrics.jsonl the step times and data waits that feed the scheduler's idle-window predictor")
      ->type_name("DIR");
  app.add_option("--scratch-dir", spec.scratch_dir,
                 "the command gets MSOMNI_SCRATCH_DIR=DIR/NAME, created at each start and removed whenever the "
                 "command ends (a preempted job leaves no scratch)")
      ->type_name("DIR");
  app.add_option("--reconnect-s", spec.reconnect_s,
                 "when msomni-sched goes away, the command keeps running and the job rejoins a restarted one "
                 "(found through the info file) for up to S seconds; then, or with 0 at once, the command is "
                 "stopped (SIGTERM) and the job ends with 1")
      ->type_name("S")
      ->transform(within(reconnect_s_limit))
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--resize-in-place", [&spec](const std::string& v) { spec.resize_in_place = v == "yes"; },
         "COMMAND is msomni-run with --run-dir DIR (give msomni job the same --run-dir): it starts with the "
         "scheduler's replicas (--set elasticity.replicas=N is added), and shrink/grow notices become "
         "scale-down/scale-up requests to its control endpoint, applied at its next barrier, instead of a "
         "restart (a failed request falls back to the restart)")
      ->check(CLI::IsMember({"yes", "no"}))
      ->default_str("no");
  app.add_option("--memory-gb", memory_gb,
                 "device memory (GB, per GPU) the job needs to run as a guest: it is placed only beside a critical "
                 "job whose memory forecast leaves that much of the device (0: not declared; the run's own memory "
                 "forecast, from RUN_DIR/events.jsonl, raises it once known)")
      ->type_name("GB")
      ->transform(within(memory_gb_limit))
      ->capture_default_str();
  app.add_option("COMMAND", spec.command, "the command and its arguments, after --");
}

}  // namespace

int run_job(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  job_spec spec;
  std::string info;
  CLI::App app{"Runs COMMAND as a job of msomni-sched, under the scheduler's decisions.", "msomni job"};
  command_line::set_conventions(app);
  app.footer(
      "Exit codes: the command's when it ran to its end (5 from msomni-run: stopped with a checkpoint, reported "
      "\"stopped\"; msomni sched-status lists it as stopped with that step, and running the same job again, same "
      "--id, resumes from it); 1 the scheduler is unreachable or went away for good; 2 usage; 3 rejected. Ctrl-C or "
      "SIGTERM: the command's group gets the same signal (SIGKILL 10 s later), and the job ends with the command's "
      "code when it stopped with a checkpoint (msomni-run: 5 \"stopped\" for SIGINT, 4 \"preempted\" for SIGTERM; "
      "both resumable as above), else 1.");
  double memory_gb = 0;
  add_flags(app, spec, info, memory_gb);
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  spec.memory_bytes = static_cast<uint64_t>(std::llround(memory_gb * 1e9));
  if (spec.command.empty()) return command_line::refuse(app, "a command after -- is required", err);
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
  bool interrupted = false;
  while (fut.wait_for(100ms) != std::future_status::ready) {
    if (stop_signal::flag() && !interrupted) {  // the runner stops the command and tells the scheduler how it ended
      interrupted = true;
      interrupt_job_runner(runner, stop_signal::number().load());  // SIGINT reaches the command as SIGINT
      err << "msomni job: interrupted\n";
    }
  }
  return fut.get();
}

}  // namespace msomni::cli
