// training_health (see training_health.hpp).
#include "training_health.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace msomni::orchestrator {

std::string number_or_nonfinite_name(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

double training_health::median_of_recent() const {
  std::vector<double> v(recent_.begin(), recent_.end());
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

health_verdict training_health::on_step(uint64_t step, double loss, double grad_norm, bool optimizer_skipped) {
  health_verdict v;
  const bool finite = std::isfinite(loss) && std::isfinite(grad_norm) && !optimizer_skipped;
  if (optimizer_skipped) ++counts_.skipped_steps;
  if (!finite) {
    ++counts_.nonfinite_steps;
    if (streak_++ == 0) streak_first_step_ = step;
    v.events.push_back({"nonfinite_step", "step " + std::to_string(step) + ": loss " + number_or_nonfinite_name(loss) +
                                              ", gradient norm " + number_or_nonfinite_name(grad_norm) +
                                              (optimizer_skipped ? "; the optimizer skipped the update" : "") + " (" +
                                              std::to_string(streak_) + " in a row, limit " +
                                              std::to_string(s_.max_nonfinite_steps) + ")"});
    if (streak_ < s_.max_nonfinite_steps) return v;
    const auto what = std::to_string(streak_) + " non-finite steps in a row (steps " +
                      std::to_string(streak_first_step_) + ".." + std::to_string(step) + ")";
    if (counts_.rollbacks == 0) {
      v.action = health_verdict::act::roll_back;
      v.reason = what + "; rolling back to the last checkpoint";
      v.events.push_back({"training_rollback", v.reason});
    } else {
      v.action = health_verdict::act::stop;
      v.reason = what + " again after rolling back to the last checkpoint: training diverges; stopping";
      v.events.push_back({"training_diverged", v.reason});
    }
    return v;
  }
  streak_ = 0;
  if (s_.loss_spike_factor > 0 && recent_.size() >= s_.spike_min_history) {
    const double median = median_of_recent();
    if (median > 0 && loss > s_.loss_spike_factor * median && loss - median > s_.spike_min_excess &&
        ++counts_.loss_spikes <= s_.spike_events_max) {
      v.events.push_back({"loss_spike", "step " + std::to_string(step) + ": loss " + number_or_nonfinite_name(loss) +
                                            " is " + number_or_nonfinite_name(loss / median) + "x the median " +
                                            number_or_nonfinite_name(median) + " of the last " +
                                            std::to_string(recent_.size()) + " steps"});
    }
  }
  recent_.push_back(loss);
  while (recent_.size() > s_.spike_window) recent_.pop_front();
  return v;
}

}  // namespace msomni::orchestrator
