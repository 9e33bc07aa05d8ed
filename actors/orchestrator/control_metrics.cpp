// control_metrics (see control_metrics.hpp).
#include "control_metrics.hpp"

#include <algorithm>

namespace msomni::orchestrator {

namespace {

// Every phase the core reports, so the phase series are all there from the start.
constexpr const char* phases[] = {"starting", "running", "shrinking", "growing", "recovering", "stopping", "done"};

}  // namespace

control_metrics::control_metrics(metrics::metrics_registry& r, std::string job)
    : r_(r), job_(std::move(job)), predictor_(predict::predictor_params{}),
      world_(r.gauge("msomni_job_world_size")), target_(r.gauge("msomni_job_target_world_size")),
      epoch_(r.gauge("msomni_job_epoch")), step_(r.gauge("msomni_job_step")),
      recoveries_(r.counter("msomni_recoveries_total")), heartbeat_misses_(r.counter("msomni_heartbeat_misses_total")),
      ckpt_bytes_(r.counter("msomni_checkpoint_bytes_total")), ckpt_seconds_(r.histogram("msomni_checkpoint_save_seconds")),
      idle_window_(r.gauge("msomni_predictor_idle_window_seconds")),
      idle_start_(r.gauge("msomni_predictor_idle_window_start_seconds")),
      idle_ratio_(r.gauge("msomni_predictor_idle_ratio")), confidence_(r.gauge("msomni_predictor_confidence")) {
  for (const char* p : phases) r.gauge("msomni_job_phase", {{"phase", p}}).Set(0);
  for (const char* result : {"committed", "failed"}) r.counter("msomni_checkpoints_total", {{"result", result}});
}

void control_metrics::on_status(const job_status& s, int64_t recoveries) {
  if (recoveries > recoveries_seen_) recoveries_.Increment(static_cast<double>(recoveries - recoveries_seen_));
  recoveries_seen_ = std::max(recoveries_seen_, recoveries);
  world_.Set(static_cast<double>(s.world));
  target_.Set(static_cast<double>(s.target));
  epoch_.Set(static_cast<double>(s.epoch));
  step_.Set(static_cast<double>(s.step));
  if (s.phase != phase_) {
    if (!phase_.empty()) r_.gauge("msomni_job_phase", {{"phase", phase_}}).Set(0);
    r_.gauge("msomni_job_phase", {{"phase", s.phase}}).Set(1);
    phase_ = s.phase;
  }
}

void control_metrics::on_event(const std::string& kind, const std::string& detail) {
  r_.counter("msomni_elastic_events_total", {{"kind", kind}}).Increment();
  // An agent's heartbeats stopped (the core's silence rule), as opposed to a closed connection.
  if (kind == "agent_down" && detail.find("no heartbeat") != std::string::npos) heartbeat_misses_.Increment();
}

void control_metrics::on_step(const msg::step_record& r) {
  if (r.checkpoint_ns > 0) ckpt_seconds_.Observe(static_cast<double>(r.checkpoint_ns) / 1e9);
  predictor_.observe(job_, {static_cast<double>(r.step_time_ns) / 1e9, static_cast<double>(r.data_wait_ns) / 1e9,
                            static_cast<double>(r.checkpoint_ns) / 1e9, 0});
  const auto f = forecast();
  idle_window_.Set(f.windows.empty() ? 0 : f.windows.front().length_s);
  idle_start_.Set(f.windows.empty() ? 0 : f.windows.front().start_in_s);
  idle_ratio_.Set(f.idle_mean);
  confidence_.Set(f.confidence);
}

void control_metrics::on_checkpoint(const msg::checkpoint_done& d) {
  r_.counter("msomni_checkpoints_total", {{"result", d.ok ? "committed" : "failed"}}).Increment();
  if (d.ok) ckpt_bytes_.Increment(static_cast<double>(d.bytes));
}

predict::idle_forecast control_metrics::forecast(double horizon_s) const {
  return predictor_.knows(job_) ? predictor_.forecast(job_, horizon_s) : predict::idle_forecast{};
}

}  // namespace msomni::orchestrator
