// guest_cost_meter (see guest_cost_meter.hpp).
#include "guest_cost_meter.hpp"

#include <algorithm>

namespace msomni::predict {

guest_cost_meter::guest_cost_meter(guest_cost_params p) : params_(p) {
  params_.alone_weight = std::clamp(params_.alone_weight, 1e-6, 1.0);
}

bool guest_cost_meter::observe(const std::string& job, const step_sample& s, bool hosting) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    if (jobs_.size() >= params_.max_jobs) return false;
    it = jobs_.emplace(job, entry{}).first;
  }
  entry& e = it->second;
  const double compute = std::max(0.0, s.step_s - s.data_wait_s - s.checkpoint_s);
  if (!hosting) {
    e.alone_mean_s = e.alone_steps == 0 ? compute : e.alone_mean_s + params_.alone_weight * (compute - e.alone_mean_s);
    ++e.alone_steps;
  } else if (e.alone_steps < params_.min_alone_steps) {
    ++e.unjudged;
  } else {
    e.excess_s += compute - e.alone_mean_s;
    ++e.hosted;
  }
  return true;
}

double guest_cost_meter::lost_s(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0.0 : std::max(0.0, it->second.excess_s);
}

uint64_t guest_cost_meter::hosted_steps(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.hosted;
}

uint64_t guest_cost_meter::unjudged_steps(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.unjudged;
}

}  // namespace msomni::predict
