// stand_for_control (see control_election.hpp).
#include "control_election.hpp"

#include "run_summary.hpp"

#include "core/dir_lock.hpp"
#include "core/stop_signal.hpp"
#include "core/store_url.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>
#include <thread>
#include <vector>

namespace msomni::apps {

namespace {

using namespace std::chrono_literals;

constexpr int exit_usage = 2;
// How many times this command line stood again (the environment carries it across the exec).
constexpr const char* stands_count_var = "MSOMNI_CONTROL_STANDS";

int exit_code_of_phase(const std::string& phase) {
  if (phase == "finished") return orchestrator::exit_finished;
  if (phase == "stopped") return orchestrator::exit_stopped;
  if (phase == "preempted") return orchestrator::exit_preempted;
  return orchestrator::exit_failed;
}

// Not elected: why, as an exit code.
int not_elected(const control::election& e, std::ostream& err) {
  stop_signal::restore();
  if (e.yielded) {
    err << "msomni-run: another control process leads the job now: " << e.previous_leader.id << " (term " << e.term
        << "); this deposed leader does not stand by\n";
    return orchestrator::exit_deposed;
  }
  if (!e.problem.empty()) {
    err << "msomni-run: " << e.problem << "; nothing was started.\n";
    return orchestrator::exit_failed;
  }
  err << "msomni-run: stopped while standing by; nothing was started.\n";
  return orchestrator::exit_stopped;
}

// Elected: whether what the store says of the job lets this process lead it. nullopt: it
// does; else the exit code.
std::optional<int> may_lead(const control::election& e, const config::job_config& cfg, const std::string& fingerprint,
                            const run_options& opts, std::ostream& err) {
  const auto& prev = e.previous;
  switch (e.what) {
    case control::takeover::other_config:
      stop_signal::restore();
      err << "msomni-run: the job \"" << cfg.job.name << "\" in the control store ran with another configuration "
          << "(fingerprint " << prev.fingerprint << ", this one " << fingerprint
          << "); every control process of a job needs the same config and --set values; nothing was started.\n";
      return exit_usage;
    case control::takeover::job_ended:
      stop_signal::restore();
      err << "msomni-run: the job ended under " << prev.leader << " (" << prev.phase << ", step " << prev.step
          << "); this standby has nothing to take over.\n";
      return exit_code_of_phase(prev.phase);
    case control::takeover::take_over:
      if (opts.fresh) {
        stop_signal::restore();
        err << "msomni-run: --fresh: the job's last leader (" << prev.leader << ") left it " << prev.phase
            << " at step " << prev.step << "; a takeover resumes it and deletes nothing. Run without --fresh; "
            << "nothing was started.\n";
        return exit_usage;
      }
      return std::nullopt;
    case control::takeover::start:
      return std::nullopt;
  }
  return std::nullopt;
}

// A leader that was cut off may still hold the run directory while it stops its ranks: the
// takeover starts once it let go (the kernel drops the lock of a dead process at once).
// nullopt: the directory is free; else the exit code.
std::optional<int> wait_for_run_dir(control_role& role, const run_paths& paths, std::ostream& err) {
  bool said = false;
  while (const auto holder = dir_lock::holder_of(paths.run_dir)) {
    if (role.deposed || stop_signal::flag()) break;
    if (!said) err << "msomni-run: waiting for " << holder->describe() << " to let go of " << paths.run_dir.string() << std::endl;
    said = true;
    std::this_thread::sleep_for(100ms);
  }
  const bool interrupted = stop_signal::flag() && !role.deposed;
  stop_signal::restore();
  if (role.deposed) {
    err << "msomni-run: lost the leadership before starting; nothing was started.\n";
    return orchestrator::exit_deposed;
  }
  if (interrupted) {
    err << "msomni-run: stopped while waiting for the run directory; nothing was started.\n";
    return orchestrator::exit_stopped;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> stand_for_control(const config::job_config& cfg, const run_paths& paths, const run_options& opts,
                                     control_role& role, std::ostream& err) {
  std::string why;
  control::leadership_options o;
  o.endpoints = parse_store_url(cfg.control.store, why);  // checked with the config
  o.job = cfg.job.name;
  o.fingerprint = control::config_fingerprint(cfg.resolved_values);
  o.run_dir = paths.run_dir.string();
  o.ttl = std::chrono::seconds(cfg.control.lease_ttl_s);
  o.yield_to_another_leader = std::getenv(stands_count_var) != nullptr;  // stood again (stand_again)
  role.leadership = std::make_unique<control::control_leadership>(o);
  stop_signal::install();
  role.elected = role.leadership->campaign(stop_signal::flag(), [&err](const std::string& line) {
    err << "msomni-run: " << line << std::endl;
  });
  const auto& e = role.elected;
  if (!e.elected) return not_elected(e, err);
  if (const auto rc = may_lead(e, cfg, o.fingerprint, opts, err)) return rc;
  role.leadership->serve([&role](const std::string& why) {
    role.deposed_why = why;
    role.lease_ran_out = !role.leadership->deposed_by_fence();
    role.deposed = true;
    stop_signal::flag() = true;  // a standby's wait below ends too
  });
  err << "msomni-run: leading the job (term " << e.term << ")"
      << (e.what == control::takeover::take_over ? ", taking over from " + e.previous.leader + " (last step " +
                                                      std::to_string(e.previous.step) + ")"
                                                : std::string())
      << std::endl;
  return wait_for_run_dir(role, paths, err);
}

int stand_again(int argc, char** argv, const control_role& role, std::ostream& err) {
  const char* before = std::getenv(stands_count_var);
  const int stood = before ? std::atoi(before) : 0;
  if (!role.lease_ran_out) return orchestrator::exit_deposed;
  if (stood >= stands_max) {
    err << "msomni-run: deposed again after standing " << stood << " times (bound " << stands_max
        << "); not standing again\n";
    return orchestrator::exit_deposed;
  }
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i)
    if (std::string_view(argv[i]) != "--fresh") args.push_back(argv[i]);
  args.push_back(nullptr);
  ::setenv(stands_count_var, std::to_string(stood + 1).c_str(), 1);
  err << "msomni-run: the lease ran out while the store did not answer and no other leader fenced this one: standing "
         "for the job's leadership again (the ranks train on; "
      << stood + 1 << " of at most " << stands_max << ")" << std::endl;
  std::cout.flush();
  // Every thread of this process is gone with the old image; no destructor runs.
  ::execv("/proc/self/exe", args.data());
  err << "msomni-run: could not stand again: " << std::strerror(errno) << "\n";
  return orchestrator::exit_deposed;
}

}  // namespace msomni::apps
