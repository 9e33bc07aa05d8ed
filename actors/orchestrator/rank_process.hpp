// A rank process this control process did not start (it adopted it after a takeover): whether
// a pid is that rank now, and its end. Reads /proc; used by the orchestrator shell only.
#pragma once

#include <cstdint>
#include <string>

namespace msomni::orchestrator {

// Whether `pid` is the msomni-rank process named `name` now (its command line says so): a pid
// read earlier may be someone else's once its process was reaped.
bool is_rank_process(int64_t pid, const std::string& name);

// SIGKILL to `pid` when it is still the rank `name`; false when it is not (nothing sent).
bool kill_rank_process(int64_t pid, const std::string& name);

}  // namespace msomni::orchestrator
