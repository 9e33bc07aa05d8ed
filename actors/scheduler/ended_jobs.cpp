// ended_jobs (see ended_jobs.hpp).
#include "ended_jobs.hpp"

#include <algorithm>

namespace msomni::sched {

const char* to_string(job_end e) {
  switch (e) {
    case job_end::finished: return "finished";
    case job_end::failed: return "failed";
    case job_end::stopped: return "stopped";
    case job_end::lost: return "lost";
  }
  return "?";
}

job_outcome outcome_of(int32_t exit_code, bool stopped, uint64_t checkpoint_step) {
  if (stopped) return {job_end::stopped, exit_code, checkpoint_step};
  return {exit_code != 0 ? job_end::failed : job_end::finished, exit_code, 0};
}

void ended_jobs::erase(std::deque<ended_job>::iterator it) {
  --counts_[static_cast<size_t>(it->outcome.end)];
  entries_.erase(it);
}

void ended_jobs::add(ended_job e) {
  auto same = std::find_if(entries_.begin(), entries_.end(), [&](const ended_job& x) { return x.id == e.id; });
  if (same != entries_.end()) erase(same);
  if (capacity_ == 0) {
    ++dropped_;
    return;
  }
  if (entries_.size() >= capacity_) {
    erase(entries_.begin());
    ++dropped_;
  }
  ++counts_[static_cast<size_t>(e.outcome.end)];
  entries_.push_back(std::move(e));
}

std::optional<ended_job> ended_jobs::take_stopped(const std::string& id) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const ended_job& x) { return x.id == id; });
  if (it == entries_.end() || it->outcome.end != job_end::stopped) return std::nullopt;
  ended_job e = std::move(*it);
  erase(it);
  return e;
}

const ended_job* ended_jobs::find(const std::string& id) const {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const ended_job& x) { return x.id == id; });
  return it == entries_.end() ? nullptr : &*it;
}

}  // namespace msomni::sched
