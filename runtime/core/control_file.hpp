// RUN_DIR/control.json, which msomni-run writes (mode 0600, replaced whole) so that local
// clients, node agents and ranks can reach the job's control endpoint:
// {"address":"HOST:PORT","token":"...","pid":N}, with "store", "job" and "follow_limit_s" when
// the job keeps its control state in a store ([control] store), whose leader rewrites it on a
// takeover.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace msomni {

struct control_file {
  std::string address, token;
  int64_t pid = 0;  // msomni-run's; 0 when the file does not say
  std::string store, job;  // [control] store and job.name when the job keeps its control state there
  std::string metrics_address;  // the job's /metrics while cluster.metrics_port is on; "" otherwise
  // With a store: how long the job's ranks and agents train on without a leader before they
  // give up (leaderless_limit_s of the lease); 0 when the file does not say.
  int64_t follow_limit_s = 0;
};

// How long ranks and node agents of a job with a control store train on while no leader leads
// it: three leases and 30 s, for a standby to take over and the new leader to answer.
inline int64_t leaderless_limit_s(int64_t lease_ttl_s) { return 3 * lease_ttl_s + 30; }

// nullopt when `file` (a run directory's control.json) cannot be read or lacks the address or
// the token.
std::optional<control_file> read_control_file(const std::filesystem::path& file);

// The run's summary.json when the run in RUN_DIR has ended: msomni-run wrote it after the
// control.json of its start (a later start rewrites control.json, making it older), or
// control.json's pid is gone. nullopt while the run may still be going (or when it left no
// summary).
std::optional<std::string> ended_run_summary(const std::filesystem::path& run_dir, const control_file& file);

// Whether the job in RUN_DIR ended for good while the leader that wrote its control.json led
// it: that leader's summary.json is no older than control.json and says something other than
// "deposed" (a deposed leader's job goes on under the next). A leader that died wrote none.
bool run_ended_under_its_leader(const std::filesystem::path& run_dir);

// Whether control.json's pid no longer runs (no process of that id).
bool control_process_gone(const control_file& file);

}  // namespace msomni
