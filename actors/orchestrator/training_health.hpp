// Whether training is healthy, judged from the step records every rank agrees on (the loss
// is all-reduced, the gradient norm is of the all-reduced gradient). Pure: steps in,
// verdicts out; the orchestrator shell journals the events and carries out the action.
//
//   healthy --non-finite loss/gradient (the optimizer skipped the step)--> streak 1, 2, ...
//   streak reaches max_nonfinite_steps --> rollback to the last checkpoint (never a
//        non-finite one: the ranks refuse to save such a state)
//   after that rollback, the streak reaches the limit again --> stop: the job fails with why
//   a finite loss beyond loss_spike_factor x the median of the recent finite losses, and
//        spike_min_excess above it --> a loss_spike event (training goes on)
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace msomni::orchestrator {

struct health_settings {
  uint64_t max_nonfinite_steps = 3;  // in a row, then roll back
  double loss_spike_factor = 5.0;    // 0 = no spike detection
  size_t spike_window = 100;         // recent finite losses whose median is the reference
  size_t spike_min_history = 20;     // no judgement before this many finite losses
  // A spike must also exceed the median by this much: near a loss of 0, a few times the
  // median is noise, not a spike (cross-entropy in nats).
  double spike_min_excess = 0.5;
  uint64_t spike_events_max = 100;   // loss_spike events journaled at most; all are counted
};

struct health_event {
  std::string kind;    // nonfinite_step | loss_spike | training_rollback | training_diverged
  std::string detail;
};

struct health_verdict {
  enum class act { carry_on, roll_back, stop };
  act action = act::carry_on;
  std::string reason;  // for roll_back and stop
  std::vector<health_event> events;
};

struct health_counts {
  uint64_t nonfinite_steps = 0;   // steps with a non-finite loss or gradient
  uint64_t skipped_steps = 0;     // steps whose update the optimizer skipped
  uint64_t loss_spikes = 0;
  uint64_t rollbacks = 0;
};

class training_health {
 public:
  explicit training_health(health_settings s) : s_(s) {}

  // One recorded step (each step once: the shell passes only records it journals).
  health_verdict on_step(uint64_t step, double loss, double grad_norm, bool optimizer_skipped);
  // The rollback asked for was planned (the streak starts over at the checkpoint).
  void on_rolled_back() {
    streak_ = 0;
    ++counts_.rollbacks;
  }

  const health_counts& counts() const noexcept { return counts_; }
  uint64_t streak() const noexcept { return streak_; }

 private:
  double median_of_recent() const;

  health_settings s_;
  health_counts counts_;
  uint64_t streak_ = 0;
  uint64_t streak_first_step_ = 0;
  std::deque<double> recent_;  // bounded by spike_window
};

// "nan", "inf", "-inf" or the number as JSON writes it; non-finite numbers have no JSON form.
std::string number_or_nonfinite_name(double v);

}  // namespace msomni::orchestrator
