// Utilisation-driven scaling: from each journaled step's busy share (compute time over step
// time: the step less its data wait and checkpoint stall), decide to add or remove one
// replica. Pure: steps and times in, decisions out; the shell asks elastic_core to resize.
//
//   mean busy share over the last scale_up_sustain_s above scale_up_utilization --> +1
//        (when a slot is free and max_replicas allows; otherwise one refusal, with why)
//   mean over the last scale_down_sustain_s below scale_down_utilization --> -1 (down to
//        min_replicas)
//   after any resize: nothing for cooldown_s, and the windows start over
#pragma once

#include "core/time_point.hpp"

#include <cstdint>
#include <deque>
#include <string>

namespace msomni::orchestrator {

struct autoscale_settings {
  bool enabled = false;
  double up_utilization = 0.90;
  nanos up_sustain{std::chrono::seconds(180)};
  double down_utilization = 0.65;
  nanos down_sustain{std::chrono::seconds(600)};
  nanos cooldown{std::chrono::seconds(300)};
  nanos grace_period{std::chrono::seconds(120)};  // the shell's for an autoscaled scale-down
};

struct autoscale_decision {
  int64_t delta = 0;   // +1, -1, or 0
  std::string reason;  // why (a refusal has delta 0 and a reason)
};

// (step time - data wait - checkpoint stall) / step time, within [0, 1]; 0 for an empty step.
double busy_share(double step_ms, double data_wait_ms, double checkpoint_ms);

class autoscale_core {
 public:
  explicit autoscale_core(autoscale_settings s) : s_(s) {}

  // `world` replicas now; `can_grow`: a slot is free and max_replicas not reached;
  // `can_shrink`: above min_replicas.
  autoscale_decision on_step(double busy, time_point now, int64_t world, bool can_grow, bool can_shrink);
  // A resize happened (by this core or anyone): cooldown, and the windows start over.
  void on_resized(time_point now);

  size_t samples() const noexcept { return window_.size(); }

 private:
  struct sample {
    time_point at;
    double busy;
  };
  // Mean busy share of the samples of the last `span`, or -1 when they do not cover it yet.
  double mean_over(nanos span, time_point now) const;

  autoscale_settings s_;
  std::deque<sample> window_;  // bounded by the longer sustain window
  time_point quiet_until_{};
  bool refused_up_ = false;  // one refusal per episode, not one per step
};

}  // namespace msomni::orchestrator
