// The scheduler's bounded history of jobs that ended: finished, failed, stopped with the
// checkpoint step to resume from, or lost (their `msomni job` went away without saying how
// they ended). A stopped job stays until the same job id is submitted again, which takes it
// out and resumes it from that step. One entry per job id (a newer end replaces an older);
// past `capacity` the oldest entry goes, and the drop is counted. Pure: no clock, no CAF.
// Kept in memory only: a restarted msomni-sched starts with an empty history.
#pragma once

#include "scheduler_types.hpp"

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace msomni::sched {

enum class job_end : uint8_t { finished, failed, stopped, lost };
inline constexpr size_t job_end_count = 4;
const char* to_string(job_end e);

// How a job ended, as its `msomni job` reported it (job_finished) or its going away implies.
struct job_outcome {
  job_end end = job_end::finished;
  int32_t exit_code = 0;
  uint64_t checkpoint_step = 0;  // stopped: the step it resumes from
};
// What a job's report of its command's end means: stopped (with its step) when it says so,
// else failed for a nonzero exit code, else finished.
job_outcome outcome_of(int32_t exit_code, bool stopped, uint64_t checkpoint_step);

struct ended_job {
  std::string id;
  job_class klass = job_class::regular;
  job_outcome outcome;
  double at_s = 0;  // when it ended
};

class ended_jobs {
 public:
  explicit ended_jobs(size_t capacity) : capacity_(capacity) {}

  // Records `e`, replacing an older entry of the same job; drops the oldest past capacity
  // (capacity 0: keeps nothing, counts every entry as dropped).
  void add(ended_job e);
  // A stopped job submitted again: its entry, taken out of the history (nullopt: it is not
  // stopped here). An entry of another kind stays.
  std::optional<ended_job> take_stopped(const std::string& id);
  const ended_job* find(const std::string& id) const;

  // Oldest first.
  const std::deque<ended_job>& entries() const noexcept { return entries_; }
  size_t capacity() const noexcept { return capacity_; }
  uint64_t count(job_end e) const noexcept { return counts_[static_cast<size_t>(e)]; }
  uint64_t dropped() const noexcept { return dropped_; }

 private:
  void erase(std::deque<ended_job>::iterator it);

  size_t capacity_;
  std::deque<ended_job> entries_;
  std::array<uint64_t, job_end_count> counts_{};
  uint64_t dropped_ = 0;
};

}  // namespace msomni::sched
