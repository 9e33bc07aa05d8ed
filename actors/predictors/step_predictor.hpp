// Step-time predictor core: keeps the last N step records of each job in a ring
// buffer and turns them into a forecast of how much of the job's GPU time will sit idle
// (data waits, checkpoints, pipeline bubbles) and where the next idle windows fall. No
// clock, no threads: callers pass records in and read forecasts out, live or simulated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msomni::predict {

// One optimizer step as the scheduler sees it. Times in seconds.
struct step_sample {
  double step_s = 0;          // wall time of the whole step, including the idle parts below
  double data_wait_s = 0;     // GPU waited for the input pipeline
  double checkpoint_s = 0;    // GPU waited for a checkpoint / evaluation phase in this step
  double bubble_share = 0;    // pipeline-bubble share of the compute part, 0..1
};

// Fraction of a step during which the job's GPUs do no work of their own.
double idle_share(const step_sample& s);

// Fixed-capacity ring of the most recent samples; the oldest is overwritten.
class step_ring {
 public:
  explicit step_ring(size_t capacity);
  void push(const step_sample& s);
  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return buf_.size(); }
  uint64_t total_pushed() const noexcept { return pushed_; }
  // i = 0 is the oldest kept sample.
  const step_sample& at(size_t i) const;

 private:
  std::vector<step_sample> buf_;
  size_t head_ = 0;  // next slot to write
  size_t size_ = 0;
  uint64_t pushed_ = 0;
};

struct step_stats {
  size_t samples = 0;
  double step_mean_s = 0;
  double step_std_s = 0;
  double idle_mean = 0;        // mean idle share per step
  double idle_std = 0;         // std of the per-step idle share
  double last_idle = 0;        // idle share of the most recent sample
  double checkpoint_every_steps = 0;  // mean gap between steps with a checkpoint phase; 0 = none seen
  double checkpoint_mean_s = 0;
  double checkpoint_min_s = 0;        // shortest checkpoint/evaluation phase kept
};

// A predicted stretch of idle GPU time, relative to now (the end of the last observed step
// plus the `since_last_s` the caller passed). Phases sit at the end of their step, as a
// checkpoint taken after the optimizer update does.
struct idle_window {
  double start_in_s = 0;
  double length_s = 0;
};

struct idle_forecast {
  double horizon_s = 0;
  double idle_mean = 0;       // expected idle share over the horizon
  // std of that share over the horizon: per-step std x sqrt(1/steps + 1/samples), the
  // spread of the horizon's steps plus the uncertainty of the mean estimated from the ring
  double idle_std = 0;
  double lendable_share = 0;  // idle_mean - safety_factor * idle_std, never below 0
  double last_idle = 0;       // the newest observation (what a predictor-less policy uses)
  double confidence = 0;      // 0..1: warm-up (samples / warmup_steps, at most 1) times stability (1 - step-time cv)
  std::vector<idle_window> windows;  // predicted checkpoint/evaluation windows in the horizon
  // Share of the horizon that predicted phases surely cover: each window shrunk by its
  // timing margin (safety_factor x step-time std x sqrt(steps until it)) at both ends and
  // cut to the shortest phase seen. During a phase the job's GPUs are idle, so this share
  // is lendable whole, on top of the ordinary idle share in the rest of the horizon.
  double phase_share = 0;
  // Idle share over the job's whole rhythm: ordinary steps at idle_mean plus its
  // checkpoint/evaluation phases at their observed period and mean length,
  // phase / (period x step + phase) of the time. idle_mean when no period is known.
  double rhythm_idle = 0;
};

struct predictor_params {
  size_t window_steps = 200;     // ring capacity per job ([scheduler] step_window)
  double safety_factor = 2.0;    // alpha ([scheduler] safety_factor)
  size_t max_jobs = 4096;        // bound on tracked jobs; a new job past it is refused
  size_t max_windows = 16;       // bound on windows returned per forecast
  size_t warmup_steps = 30;      // samples before the confidence can reach 1
};

class step_predictor {
 public:
  explicit step_predictor(predictor_params p);

  // False when the job table is full (the record is dropped, never grows unbounded).
  bool observe(const std::string& job, const step_sample& s);
  void forget(const std::string& job);
  bool knows(const std::string& job) const { return rings_.count(job) != 0; }
  size_t jobs() const noexcept { return rings_.size(); }

  step_stats stats(const std::string& job) const;
  // since_last_s: time from the end of the newest observed step to now (the step in
  // progress), so that windows are placed relative to now.
  idle_forecast forecast(const std::string& job, double horizon_s, double since_last_s = 0) const;
  const predictor_params& params() const noexcept { return params_; }

 private:
  predictor_params params_;
  std::map<std::string, step_ring> rings_;
};

}  // namespace msomni::predict
