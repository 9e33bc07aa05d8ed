// What msomni-run's control process sets up for a job, decided from the config alone (pure:
// no file, clock, process or socket; launch_job.cpp carries it out): control.json's fields,
// each rank's command line, the elastic core's, autoscale and health settings, how long a
// takeover waits for the ranks to rejoin, the msomni-agent commands of listed nodes, and how
// the run ended (state, exit code, reason).
#pragma once

#include "autoscale_core.hpp"
#include "elastic_core.hpp"
#include "run_summary.hpp"
#include "training_health.hpp"

#include "config/job_config.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace msomni::apps {

// control.json: the control address and token (mode 0600), this process's pid, the metrics
// address when served, and with a [control] store the store, the job and how long the node
// agents follow a lost leader.
nlohmann::ordered_json control_file_json(const std::string& address, const std::string& token, int64_t pid,
                                         const std::string& metrics_address, const config::job_config& cfg);

struct rank_launch {
  std::string config_path;     // absolute
  std::string control_address;
  std::string checkpoint_dir;
  std::string control_file;    // the run's control.json, which the ranks follow
  std::vector<std::string> overrides;
};
// msomni-rank's arguments for `rank`. The rank trains on when the control process stops
// answering and rejoins whoever control.json names: that process when it answers again, or
// with a [control] store the next leader.
std::vector<std::string> rank_arguments(const rank_launch& l, const std::string& rank);

// How long a takeover waits for the previous leader's ranks to rejoin before it starts anew:
// they see a dead leader's connection drop at once, a frozen one's after the heartbeat misses,
// and read the new address from control.json within a fraction of a second.
nanos adopt_window_for(std::chrono::milliseconds heartbeat, int64_t misses);
std::chrono::milliseconds heartbeat_of(const config::job_config& cfg);

orchestrator::elastic_settings elastic_settings_from(const config::job_config& cfg, bool resume);
// The replicas a takeover starts with: those of the last resize an earlier leader completed
// (the store's 0: none, the config's), within the config's bounds.
int64_t takeover_replicas(int64_t stored, const config::job_config& cfg);
orchestrator::autoscale_settings autoscale_settings_from(const config::job_config& cfg);
orchestrator::health_settings health_settings_from(const config::job_config& cfg);

// The command a person runs on each [[cluster.nodes]] node to start its agent.
std::vector<std::string> agent_commands(const config::job_config& cfg, const std::string& control_address,
                                        const std::string& control_file);

// What the orchestrator said of the job's end, and what else the control process saw.
struct end_inputs {
  bool ok = true, stopped = false, preempted = false, deposed = false, preflight_failed = false;
  std::string reason;
  bool journal_failed = false;
  std::string journal_failure;
  std::vector<std::string> rank_crashes;  // ranks that died by a signal after their result
};
// The state, exit code and reason of the run (the rest of run_end is the caller's). The exit
// codes (msomni-run --help): finished 0, failed 1, pre-flight failed on an agent's node 3
// (nothing trained), preempted 4 (SIGTERM: a manager took the resources back), stopped 5
// (SIGINT or `msomni stop`), deposed 6 (another control process leads the job now); both stops
// are resumable alike. A rank
// that died by a signal after its result fails a run that would have finished: whatever broke
// it may have broken something before.
orchestrator::run_end decide_run_end(const end_inputs& in);

}  // namespace msomni::apps
