// autoscale_core (see autoscale_core.hpp).
#include "autoscale_core.hpp"

#include "number_text.hpp"

#include <algorithm>

namespace msomni::orchestrator {

namespace {

std::string percent(double v) { return fixed(100.0 * v, 0) + "%"; }
std::string seconds(nanos d) { return fixed(std::chrono::duration<double>(d).count(), 0) + " s"; }

}  // namespace

double busy_share(double step_ms, double data_wait_ms, double checkpoint_ms) {
  if (!(step_ms > 0)) return 0;
  return std::clamp((step_ms - data_wait_ms - checkpoint_ms) / step_ms, 0.0, 1.0);
}

double autoscale_core::mean_over(nanos span, time_point now) const {
  if (window_.empty() || now - window_.front().at < span) return -1;
  double sum = 0;
  size_t n = 0;
  for (auto it = window_.rbegin(); it != window_.rend() && now - it->at <= span; ++it, ++n) sum += it->busy;
  return n ? sum / static_cast<double>(n) : -1;
}

autoscale_decision autoscale_core::on_step(double busy, time_point now, int64_t world, bool can_grow, bool can_shrink) {
  autoscale_decision d;
  if (!s_.enabled || now < quiet_until_) return d;
  window_.push_back({now, busy});
  const auto keep = std::max(s_.up_sustain, s_.down_sustain);
  while (window_.size() > 1 && now - window_[1].at >= keep) window_.pop_front();
  if (const double up = mean_over(s_.up_sustain, now); up > s_.up_utilization) {
    const auto why = "busy " + percent(up) + " of the step over the last " + seconds(s_.up_sustain) + " (above " +
                     percent(s_.up_utilization) + ")";
    if (can_grow) {
      d.delta = 1;
      d.reason = why + ": one more replica, " + std::to_string(world + 1) + " in all";
    } else if (!refused_up_) {
      refused_up_ = true;
      d.reason = why + ", but no free slot or max_replicas reached: staying at " + std::to_string(world);
    }
    return d;
  }
  refused_up_ = false;
  if (const double down = mean_over(s_.down_sustain, now); down >= 0 && down < s_.down_utilization && can_shrink) {
    d.delta = -1;
    d.reason = "busy " + percent(down) + " of the step over the last " + seconds(s_.down_sustain) + " (below " +
               percent(s_.down_utilization) + "): one replica less, " + std::to_string(world - 1) + " in all";
  }
  return d;
}

void autoscale_core::on_resized(time_point now) {
  window_.clear();
  refused_up_ = false;
  quiet_until_ = now + s_.cooldown;
}

}  // namespace msomni::orchestrator
