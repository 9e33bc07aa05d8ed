// omni's reserve for critical jobs: critical demand remembered as a sliding-window peak,
// and the room regular jobs may lock beside it (scheduler_params::critical_peak_memory_s).
#include "scheduler_core.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace msomni::sched {

// Critical demand (GPUs held or wanted by critical jobs), remembered as a sliding-window
// maximum over critical_peak_memory_s (critical_peak_now_).
void scheduler_core::note_critical_demand(double now_s) {
  if (params_.policy != policy_kind::omni || params_.critical_peak_memory_s <= 0) return;
  uint32_t demand = 0;
  for (const auto& id : running_) {
    const job_state& j = jobs_.at(id);
    if (j.req.klass == job_class::critical) demand += static_cast<uint32_t>(j.gpus.size());
  }
  for (const auto& key : pending_) {
    if (std::get<0>(key) != static_cast<uint8_t>(job_class::critical)) break;
    demand += jobs_.at(std::get<3>(key)).req.gpus;
  }
  while (!critical_peak_.empty() && critical_peak_.back().second <= demand) critical_peak_.pop_back();
  critical_peak_.emplace_back(now_s, demand);
  while (critical_peak_.front().first < now_s - params_.critical_peak_memory_s ||
         critical_peak_.size() > params_.critical_peak_samples)
    critical_peak_.pop_front();
  critical_peak_now_ = static_cast<uint32_t>(
      std::ceil(critical_peak_.front().second * std::max(params_.critical_reserve_factor, 0.0)));
}

// GPUs a critical job could not get back at once: every GPU a running regular job holds
// (inside its run window it keeps them; past it, or to shrink, it drains first, and a
// drain of minutes is a large slowdown for a short critical job). Best-effort gives way at
// once and free GPUs are free.
uint32_t scheduler_core::locked_regular_gpus() const {
  uint32_t n = 0;
  for (const auto& id : running_) {
    const job_state& j = jobs_.at(id);
    if (j.req.klass == job_class::regular && !j.borrowed) n += static_cast<uint32_t>(j.gpus.size());
  }
  return n;
}

// GPUs regular jobs may still take beside omni's reserve for critical jobs (no bound when
// there is no reserve). Computed once per pass; starts and growth take from it.
int64_t scheduler_core::regular_room() const {
  if (params_.policy != policy_kind::omni || params_.critical_peak_memory_s <= 0)
    return std::numeric_limits<int64_t>::max() / 2;
  return std::max<int64_t>(int64_t{place_.total()} - critical_peak_now_ - locked_regular_gpus(), 0);
}

}  // namespace msomni::sched
