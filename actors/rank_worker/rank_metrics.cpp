// rank_metrics (see rank_metrics.hpp).
#include "rank_metrics.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace msomni::rank_worker {

namespace {

constexpr auto relaxed = std::memory_order_relaxed;

// A counter kept elsewhere as a total: the series follows it (totals never go down).
void follow(prometheus::Counter& c, double total) {
  const double now = c.Value();
  if (total > now) c.Increment(total - now);
}

// Resident set of this process, from /proc/self/statm (its second field, in pages); 0 when unreadable.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

rank_metrics::rank_metrics(std::shared_ptr<metrics::metrics_registry> registry)
    : registry_(std::move(registry)),
      step_(registry_->gauge("msomni_rank_step")),
      steps_(registry_->counter("msomni_rank_steps_total")),
      step_seconds_(registry_->histogram("msomni_rank_step_seconds")),
      tokens_per_second_(registry_->gauge("msomni_rank_tokens_per_second")),
      own_tokens_per_second_(registry_->gauge("msomni_rank_own_tokens_per_second")),
      compute_seconds_(registry_->gauge("msomni_rank_compute_seconds")),
      step_imbalance_(registry_->gauge("msomni_rank_step_imbalance_ratio")),
      cost_model_error_(registry_->gauge("msomni_rank_cost_model_error_ratio")),
      data_wait_ratio_(registry_->gauge("msomni_rank_data_wait_ratio")),
      loss_(registry_->gauge("msomni_rank_loss")),
      data_wait_seconds_(registry_->counter("msomni_data_wait_seconds_total")),
      allreduce_seconds_(registry_->counter("msomni_rank_allreduce_seconds_total")),
      allreduce_bytes_(registry_->counter("msomni_rank_allreduce_bytes_total")),
      collective_shared_bytes_(registry_->gauge("msomni_rank_collective_shared_bytes")),
      control_records_kept_(registry_->gauge("msomni_rank_control_records_kept")),
      verify_failures_(registry_->counter("msomni_checkpoint_verify_failures_total")),
      host_memory_(registry_->gauge("msomni_rank_memory_bytes", {{"kind", "host"}})),
      compute_in_use_(registry_->gauge("msomni_rank_compute_memory_bytes", {{"kind", "in_use"}})),
      compute_peak_(registry_->gauge("msomni_rank_compute_memory_bytes", {{"kind", "peak"}})),
      compute_budget_(registry_->gauge("msomni_rank_compute_memory_bytes", {{"kind", "budget"}})),
      batch_memory_(registry_->gauge("msomni_rank_batch_memory_bytes")) {
  const char* stage_names[] = {"reader", "decoder", "tensor"};
  for (size_t i = 0; i < stages_.size(); ++i) {
    const metrics::labels l{{"stage", stage_names[i]}};
    stages_[i] = {&registry_->gauge("msomni_data_stage_fill", l), &registry_->gauge("msomni_data_stage_capacity", l),
                  &registry_->gauge("msomni_data_stage_fill_ratio", l),
                  &registry_->gauge("msomni_data_credits_outstanding", l)};
  }
  for (int m = 0; m < modality_count; ++m) {
    const metrics::labels l{{"modality", to_string(modality(m))}};
    samples_[size_t(m)] = &registry_->counter("msomni_data_samples_total", l);
    decode_seconds_[size_t(m)] = &registry_->counter("msomni_data_decode_seconds_total", l);
  }
  downgrades_ = &registry_->counter("msomni_data_downgrades_total", {{"modality", "video"}});
  mismatched_names_ = &registry_->counter("msomni_data_mismatched_name_total");
  for (int r = 0; r < data::bad_reason_count; ++r)
    bad_[size_t(r)] = &registry_->counter("msomni_data_bad_samples_total", {{"reason", data::to_string(data::bad_reason(r))}});
  const char* outcomes[] = {"dropped", "overflowed", "resent"};
  for (size_t i = 0; i < control_reports_.size(); ++i)
    control_reports_[i] = &registry_->counter("msomni_rank_control_reports_total", {{"outcome", outcomes[i]}});
  refresher_ = registry_->add_refresher([this] { refresh(); });
}

void rank_metrics::on_control_link(uint64_t kept, uint64_t dropped, uint64_t overflowed, uint64_t resent) {
  control_records_kept_.Set(static_cast<double>(kept));
  const uint64_t now[] = {dropped, overflowed, resent};
  for (size_t i = 0; i < control_reports_.size(); ++i) {
    if (now[i] > control_reports_seen_[i])
      control_reports_[i]->Increment(static_cast<double>(now[i] - control_reports_seen_[i]));
    control_reports_seen_[i] = now[i];
  }
}

void rank_metrics::set_compute(int cuda_device, int64_t threads) {
  if (!threads_)
    threads_ = &registry_->gauge("msomni_rank_threads",
                                 {{"device", cuda_device < 0 ? "cpu" : "cuda:" + std::to_string(cuda_device)}});
  threads_->Set(static_cast<double>(threads));
}

void rank_metrics::on_step(const msg::step_record& r, const rank_trainer& t) {
  const auto allreduce = t.last_allreduce();
  const double own_tokens_per_s = t.own_tokens_per_s();
  compute_seconds_.Set(t.own_compute_ms() / 1e3);
  step_imbalance_.Set(r.compute_ms_mean > 0 ? r.compute_ms_max / r.compute_ms_mean : 1.0);
  if (const auto e = t.cost_model().error()) cost_model_error_.Set(*e);
  const double step_s = static_cast<double>(r.step_time_ns) / 1e9;
  const double wait_s = static_cast<double>(r.data_wait_ns) / 1e9;
  step_.Set(static_cast<double>(r.step));
  steps_.Increment();
  step_seconds_.Observe(step_s);
  tokens_per_second_.Set(r.tokens_per_s);
  own_tokens_per_second_.Set(own_tokens_per_s);
  data_wait_ratio_.Set(step_s > 0 ? std::clamp(wait_s / step_s, 0.0, 1.0) : 0.0);
  loss_.Set(r.loss);
  data_wait_seconds_.Increment(wait_s);
  allreduce_seconds_.Increment(static_cast<double>(allreduce.time.count()) / 1e9);
  allreduce_bytes_.Increment(static_cast<double>(allreduce.bytes));
}

void rank_metrics::on_collective_shared_bytes(uint64_t bytes) {
  collective_shared_bytes_.Set(static_cast<double>(bytes));
}

void rank_metrics::on_memory(const msg::memory_sample& s) {
  compute_in_use_.Set(static_cast<double>(s.in_use_bytes));
  compute_peak_.Set(static_cast<double>(s.peak_bytes));
  compute_budget_.Set(static_cast<double>(s.budget_bytes));
  batch_memory_.Set(static_cast<double>(s.host_batch_bytes));
}

void rank_metrics::on_checkpoint_load(uint64_t skipped) {
  if (skipped > 0) verify_failures_.Increment(static_cast<double>(skipped));
}

void rank_metrics::refresh() {
  const data::live_stage* live_stages[] = {&live_->reader, &live_->decoder, &live_->tensor};
  for (size_t i = 0; i < stages_.size(); ++i) {
    const double fill = live_stages[i]->fill.load(relaxed), capacity = live_stages[i]->capacity.load(relaxed);
    stages_[i].fill->Set(fill);
    stages_[i].capacity->Set(capacity);
    stages_[i].ratio->Set(capacity > 0 ? std::clamp(fill / capacity, 0.0, 1.0) : 0.0);
    stages_[i].credits->Set(live_stages[i]->credits.load(relaxed));
  }
  for (size_t m = 0; m < samples_.size(); ++m) {
    follow(*samples_[m], static_cast<double>(live_->decoded[m].load(relaxed)));
    follow(*decode_seconds_[m], static_cast<double>(live_->decode_ns[m].load(relaxed)) / 1e9);
  }
  follow(*downgrades_, static_cast<double>(live_->downgrades.load(relaxed)));
  follow(*mismatched_names_, static_cast<double>(live_->mismatched_name.load(relaxed)));
  for (size_t r = 0; r < bad_.size(); ++r) follow(*bad_[r], static_cast<double>(live_->bad[r].load(relaxed)));
  host_memory_.Set(resident_bytes());
}

}  // namespace msomni::rank_worker
