// msomni-sched's own metric series (the catalog's "scheduler" families), set by the scheduler
// shell from what the core returns and reports: jobs by class and phase, GPUs free and used,
// guests, preemptions by class, reservation windows a critical job lent nothing past its
// slowdown budget, the queue wait of each job's first start, each running job's
// idle-window forecast, and the history of ended jobs (kept by how they ended, its bound,
// the entries dropped past it). The shell calls it on its own thread; the endpoint's collect() may run
// on another at the same time (gauges and counters are atomics, the per-job forecasts sit
// behind a lock).
//
// The per-job forecast series (msomni_sched_idle_window_seconds{job},
// msomni_sched_idle_confidence{job}) are kept here, not in the registry, so that a job's
// series go when the job ends: their number stays bounded by the jobs running now.
#pragma once

#include "scheduler_core.hpp"

#include "metrics/metrics_registry.hpp"

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace msomni::sched {

class scheduler_metrics {
 public:
  // Creates every series of the scheduler's families that has a fixed label set (jobs for
  // each class and phase, GPUs by state, guests, preemptions and queue waits by class, budget
  // holds), each at 0, in `registry` (required).
  explicit scheduler_metrics(std::shared_ptr<metrics::metrics_registry> registry);

  const std::shared_ptr<metrics::metrics_registry>& registry() const { return registry_; }

  // The core's counts after an event.
  void set_counts(const class_phase_counts& jobs, uint32_t gpus_total, uint32_t gpus_free,
                  uint64_t budget_hold_windows);
  // The core's history of ended jobs after an event.
  void set_ended(const ended_jobs& ended);
  // The core's guest evictions by cause and memory skips after an event (counters follow them).
  void set_memory(const std::array<uint64_t, eviction_cause_count>& evictions, uint64_t memory_skips);
  // A job's memory report: taken (the core knows the job) or not (unknown).
  void memory_report(bool taken);
  // A job of class `c` was told to give all its GPUs back (a preemption notice).
  void preempted(job_class c);
  // A job of class `c` started for the first time, `waited_s` after it was submitted.
  void first_start(job_class c, double waited_s);
  // A running job's forecast: the length of its next predicted idle window (0: none) and
  // the forecast's confidence.
  void set_forecast(const std::string& job, double idle_window_s, double confidence);
  // The job ended, or no longer runs: its forecast series go.
  void forget(const std::string& job);
  size_t forecast_jobs() const;

  // The registry's families (its refreshers run first), then the per-job forecast families
  // (present, with their help and type, even while no job runs).
  std::vector<prometheus::MetricFamily> collect();

 private:
  struct forecast {
    double idle_window_s = 0, confidence = 0;
  };

  std::shared_ptr<metrics::metrics_registry> registry_;
  std::array<std::array<prometheus::Gauge*, job_phase_count>, 3> jobs_{};
  prometheus::Gauge* gpus_free_ = nullptr;
  prometheus::Gauge* gpus_used_ = nullptr;
  prometheus::Gauge* guests_ = nullptr;
  std::array<prometheus::Counter*, 3> preemptions_{};
  std::array<prometheus::Histogram*, 3> queue_wait_{};
  prometheus::Counter* budget_holds_ = nullptr;
  uint64_t budget_holds_seen_ = 0;
  std::array<prometheus::Gauge*, job_end_count> ended_{};
  prometheus::Gauge* ended_capacity_ = nullptr;
  prometheus::Counter* ended_dropped_ = nullptr;
  uint64_t ended_dropped_seen_ = 0;
  std::array<prometheus::Counter*, eviction_cause_count> evictions_{};
  std::array<uint64_t, eviction_cause_count> evictions_seen_{};
  prometheus::Counter* memory_skips_ = nullptr;
  uint64_t memory_skips_seen_ = 0;
  prometheus::Counter* memory_reports_taken_ = nullptr;
  prometheus::Counter* memory_reports_unknown_ = nullptr;
  mutable std::mutex forecast_mutex_;
  std::map<std::string, forecast> forecasts_;
};

}  // namespace msomni::sched
