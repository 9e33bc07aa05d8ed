// What a critical job loses to the guests on its GPUs, estimated from its own step reports:
// the live side of scheduler_core::report_guest_delay (msomni-sim knows the loss exactly).
// A step's compute time (the step less its data wait and checkpoint/evaluation phase, the
// parts a guest cannot lengthen) taken while guests shared the GPUs is compared with the
// job's recent compute time alone (an exponential mean over its steps alone). The loss is
// the sum of those differences over the hosted steps, never below 0: step-to-step noise
// cancels in the sum, a step a guest slowed counts whole. No clock, no threads; bounded to
// one small entry per job and at most max_jobs jobs.
#pragma once

#include "step_predictor.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace msomni::predict {

struct guest_cost_params {
  size_t max_jobs = 4096;
  double alone_weight = 0.05;  // weight of a new step alone in the exponential mean (~20 steps)
  uint64_t min_alone_steps = 5;  // steps alone needed before a hosted step can be judged
};

class guest_cost_meter {
 public:
  explicit guest_cost_meter(guest_cost_params p = {});

  // `hosting`: guests shared the job's GPUs during this step. False when the job table is
  // full (the record is dropped).
  bool observe(const std::string& job, const step_sample& s, bool hosting);
  // Seconds of run time the job has lost to its guests so far (0 for an unknown job).
  double lost_s(const std::string& job) const;
  // Hosted steps judged against a baseline, and those that came before it had one.
  uint64_t hosted_steps(const std::string& job) const;
  uint64_t unjudged_steps(const std::string& job) const;
  void forget(const std::string& job) { jobs_.erase(job); }
  size_t jobs() const noexcept { return jobs_.size(); }

 private:
  struct entry {
    double alone_mean_s = 0;
    uint64_t alone_steps = 0;
    double excess_s = 0;  // sum over judged hosted steps of (compute - mean alone)
    uint64_t hosted = 0, unjudged = 0;
  };
  guest_cost_params params_;
  std::map<std::string, entry> jobs_;
};

}  // namespace msomni::predict
