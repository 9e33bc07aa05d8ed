// The control process's own series (msomni_job_*, msomni_elastic_events_total, recoveries,
// heartbeat misses, checkpoints, the job's idle-window prediction), kept by the orchestrator
// shell from what it already sees: the core's status, journaled events, step records and
// checkpoint reports. The step predictor runs on the same records the scheduler's would.
#pragma once

#include "elastic_core.hpp"
#include "metrics/metrics_registry.hpp"
#include "step_predictor.hpp"

#include "messages/control_messages.hpp"
#include "messages/training_messages.hpp"

#include <string>

namespace msomni::orchestrator {

class control_metrics {
 public:
  control_metrics(metrics::metrics_registry& registry, std::string job);

  // The core's status and its count of recoveries so far.
  void on_status(const job_status& s, int64_t recoveries);
  void on_event(const std::string& kind, const std::string& detail);
  void on_step(const msg::step_record& r);
  void on_checkpoint(const msg::checkpoint_done& d);

  // The job's idle-window forecast over the next `horizon_s`, from the steps seen so far.
  predict::idle_forecast forecast(double horizon_s = 60) const;

 private:
  metrics::metrics_registry& r_;
  std::string job_;
  predict::step_predictor predictor_;
  std::string phase_;
  int64_t recoveries_seen_ = 0;
  prometheus::Gauge &world_, &target_, &epoch_, &step_;
  prometheus::Counter &recoveries_, &heartbeat_misses_, &ckpt_bytes_;
  prometheus::Histogram& ckpt_seconds_;
  prometheus::Gauge &idle_window_, &idle_start_, &idle_ratio_, &confidence_;
};

}  // namespace msomni::orchestrator
