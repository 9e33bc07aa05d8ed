// The class of a job on a shared cluster, one definition for the job config ([job] class),
// the scheduler and the messages between them (as its number): critical jobs are never
// preempted, regular ones may be shrunk or preempted for them, best-effort ones borrow idle
// windows and give them back.
#pragma once

#include <cstdint>

namespace msomni {

enum class job_class : uint8_t { critical = 0, regular = 1, best_effort = 2 };

inline const char* to_string(job_class c) {
  switch (c) {
    case job_class::critical: return "critical";
    case job_class::regular: return "regular";
    case job_class::best_effort: return "best_effort";
  }
  return "?";
}

}  // namespace msomni
