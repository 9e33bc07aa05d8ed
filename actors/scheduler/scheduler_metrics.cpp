// scheduler_metrics (see scheduler_metrics.hpp).
#include "scheduler_metrics.hpp"

#include "metrics/metric_catalog.hpp"

#include <stdexcept>

namespace msomni::sched {

namespace {

constexpr job_class classes[] = {job_class::critical, job_class::regular, job_class::best_effort};

size_t index_of(job_class c) { return std::min<size_t>(static_cast<size_t>(c), 2); }

// A family of the catalog, built here with its name, help and type.
prometheus::MetricFamily family_of(std::string_view name) {
  const auto* spec = metrics::find_family(name);
  if (!spec) throw std::logic_error("metric family " + std::string(name) + " is not in the metric catalog");
  prometheus::MetricFamily f;
  f.name = std::string(spec->name);
  f.help = std::string(spec->help);
  f.type = prometheus::MetricType::Gauge;
  return f;
}

}  // namespace

scheduler_metrics::scheduler_metrics(std::shared_ptr<metrics::metrics_registry> registry)
    : registry_(std::move(registry)) {
  if (!registry_) throw std::invalid_argument("scheduler_metrics: a registry is required");
  auto& r = *registry_;
  for (job_class c : classes) {
    const std::string klass = to_string(c);
    const size_t i = index_of(c);
    for (size_t p = 0; p < job_phase_count; ++p)
      jobs_[i][p] = &r.gauge("msomni_sched_jobs", {{"class", klass}, {"phase", to_string(static_cast<job_phase>(p))}});
    preemptions_[i] = &r.counter("msomni_sched_preemptions_total", {{"class", klass}});
    queue_wait_[i] = &r.histogram("msomni_sched_queue_wait_seconds", {{"class", klass}});
  }
  gpus_free_ = &r.gauge("msomni_sched_gpus", {{"state", "free"}});
  gpus_used_ = &r.gauge("msomni_sched_gpus", {{"state", "used"}});
  guests_ = &r.gauge("msomni_sched_guests");
  budget_holds_ = &r.counter("msomni_sched_budget_holds_total");
  for (size_t e = 0; e < job_end_count; ++e)
    ended_[e] = &r.gauge("msomni_sched_ended_jobs", {{"end", to_string(static_cast<job_end>(e))}});
  ended_capacity_ = &r.gauge("msomni_sched_ended_jobs_capacity");
  ended_dropped_ = &r.counter("msomni_sched_ended_jobs_dropped_total");
  for (size_t c = 0; c < eviction_cause_count; ++c)
    evictions_[c] = &r.counter("msomni_sched_guest_evictions_total", {{"reason", to_string(static_cast<eviction_cause>(c))}});
  memory_skips_ = &r.counter("msomni_sched_guest_memory_skips_total");
  memory_reports_taken_ = &r.counter("msomni_sched_memory_reports_total", {{"result", "taken"}});
  memory_reports_unknown_ = &r.counter("msomni_sched_memory_reports_total", {{"result", "unknown"}});
}

void scheduler_metrics::set_memory(const std::array<uint64_t, eviction_cause_count>& evictions, uint64_t memory_skips) {
  for (size_t c = 0; c < eviction_cause_count; ++c) {
    if (evictions[c] > evictions_seen_[c]) evictions_[c]->Increment(static_cast<double>(evictions[c] - evictions_seen_[c]));
    evictions_seen_[c] = std::max(evictions_seen_[c], evictions[c]);
  }
  if (memory_skips > memory_skips_seen_) memory_skips_->Increment(static_cast<double>(memory_skips - memory_skips_seen_));
  memory_skips_seen_ = std::max(memory_skips_seen_, memory_skips);
}

void scheduler_metrics::memory_report(bool taken) { (taken ? memory_reports_taken_ : memory_reports_unknown_)->Increment(); }

void scheduler_metrics::set_ended(const ended_jobs& ended) {
  for (size_t e = 0; e < job_end_count; ++e) ended_[e]->Set(static_cast<double>(ended.count(static_cast<job_end>(e))));
  ended_capacity_->Set(static_cast<double>(ended.capacity()));
  if (ended.dropped() > ended_dropped_seen_)
    ended_dropped_->Increment(static_cast<double>(ended.dropped() - ended_dropped_seen_));
  ended_dropped_seen_ = std::max(ended_dropped_seen_, ended.dropped());
}

void scheduler_metrics::set_counts(const class_phase_counts& jobs, uint32_t gpus_total, uint32_t gpus_free,
                                   uint64_t budget_hold_windows) {
  uint64_t guests = 0;
  for (size_t c = 0; c < jobs.size(); ++c) {
    for (size_t p = 0; p < job_phase_count; ++p) jobs_[c][p]->Set(static_cast<double>(jobs[c][p]));
    guests += jobs[c][static_cast<size_t>(job_phase::guest)];
  }
  gpus_free_->Set(gpus_free);
  gpus_used_->Set(gpus_total >= gpus_free ? gpus_total - gpus_free : 0);
  guests_->Set(static_cast<double>(guests));
  // The core's count only grows; the counter follows it.
  if (budget_hold_windows > budget_holds_seen_)
    budget_holds_->Increment(static_cast<double>(budget_hold_windows - budget_holds_seen_));
  budget_holds_seen_ = std::max(budget_holds_seen_, budget_hold_windows);
}

void scheduler_metrics::preempted(job_class c) { preemptions_[index_of(c)]->Increment(); }

void scheduler_metrics::first_start(job_class c, double waited_s) {
  queue_wait_[index_of(c)]->Observe(std::max(0.0, waited_s));
}

void scheduler_metrics::set_forecast(const std::string& job, double idle_window_s, double confidence) {
  std::lock_guard lock(forecast_mutex_);
  forecasts_[job] = {idle_window_s, confidence};
}

void scheduler_metrics::forget(const std::string& job) {
  std::lock_guard lock(forecast_mutex_);
  forecasts_.erase(job);
}

size_t scheduler_metrics::forecast_jobs() const {
  std::lock_guard lock(forecast_mutex_);
  return forecasts_.size();
}

std::vector<prometheus::MetricFamily> scheduler_metrics::collect() {
  auto out = registry_->collect();
  auto window = family_of("msomni_sched_idle_window_seconds");
  auto confidence = family_of("msomni_sched_idle_confidence");
  {
    std::lock_guard lock(forecast_mutex_);
    for (const auto& [job, f] : forecasts_) {
      prometheus::ClientMetric m;
      m.label = {{"job", job}};
      m.gauge.value = f.idle_window_s;
      window.metric.push_back(m);
      m.gauge.value = f.confidence;
      confidence.metric.push_back(std::move(m));
    }
  }
  out.push_back(std::move(window));
  out.push_back(std::move(confidence));
  return out;
}

}  // namespace msomni::sched
