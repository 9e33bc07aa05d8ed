// RUN_DIR/control.json, which msomni-run writes (mode 0600) so that local clients can reach
// its control endpoint: {"address":"HOST:PORT","token":"...","pid":N}, with "store" and "job"
// when the job keeps its control state in a store ([control] store).
#pragma once

#include <caf/actor.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace msomni::cli {

struct control_file {
  std::string address, token;
  int64_t pid = 0;  // msomni-run's; 0 when the file does not say
  std::string store, job;  // [control] store and job.name when the job keeps its control state there
};

// msomni-run's orchestrator (its control endpoint, joined) and the run's token.
struct control_endpoint {
  caf::actor orchestrator;
  std::string token;
};

// nullopt when RUN_DIR/control.json cannot be read or lacks the address or the token.
std::optional<control_file> read_control_file(const std::string& run_dir);

// The run's summary.json when the run in RUN_DIR has ended: msomni-run wrote it after the
// control.json of its start (a later start rewrites control.json, making it older), or
// control.json's pid is gone. nullopt while the run may still be going (or when it left no
// summary).
std::optional<std::string> ended_run_summary(const std::string& run_dir, const control_file& file);
// Whether control.json's pid no longer runs (no process of that id).
bool control_process_gone(const control_file& file);

}  // namespace msomni::cli
