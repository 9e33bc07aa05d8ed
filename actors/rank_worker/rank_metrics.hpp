// A rank process's own metric series (the catalog's families exported by "rank"). The training
// loop's are looked up here once and updated once per step with a few atomic operations; the
// data stages' and the process's resident memory are copied in by a refresher at collection
// time, from data::live_data_metrics (which the stages keep) and /proc/self/statm, so neither
// the training thread nor the stages pay for them. Made only when metrics are on.
#pragma once

#include "batch_source.hpp"
#include "live_data_metrics.hpp"
#include "metrics/metrics_registry.hpp"
#include "messages/scheduling_messages.hpp"
#include "messages/training_messages.hpp"
#include "rank_trainer.hpp"

#include <array>
#include <memory>

namespace msomni::rank_worker {

class rank_metrics {
 public:
  explicit rank_metrics(std::shared_ptr<metrics::metrics_registry> registry);
  rank_metrics(const rank_metrics&) = delete;
  rank_metrics& operator=(const rank_metrics&) = delete;

  const std::shared_ptr<metrics::metrics_registry>& registry() const { return registry_; }
  // What the rank's data sources feed (make_batch_source's watch).
  data_watch data() const { return {registry_, live_}; }

  // The rank computes with `threads` threads, on the CPU (`cuda_device` -1) or that GPU.
  void set_compute(int cuda_device, int64_t threads);
  // After every optimizer step, in the training thread. The loss is the step's all-reduced
  // mean over every rank's target tokens, so every rank reports the same one.
  // own_tokens_per_s: this rank's alone (the record's tokens_per_s is the job's).
  // After every step: the record, and what the trainer measured of this rank (its own tokens/s,
  // compute time, all-reduce, the batch cost model's error).
  void on_step(const msg::step_record& r, const rank_trainer& t);
  // After every optimizer step's memory sample (memory_probe.hpp): the compute backend's bytes in
  // use and the step's peak, its budget, and the batch memory the data pipeline holds.
  void on_memory(const msg::memory_sample& s);
  // After every optimizer step: the bytes this rank shares with its same-host peers for the
  // gradient all-reduce (0 on the UCX ring).
  void on_collective_shared_bytes(uint64_t bytes);
  // The control link's counts (records kept; dropped, overflowed and resent reports so far).
  void on_control_link(uint64_t kept, uint64_t dropped, uint64_t overflowed, uint64_t resent);
  // After every load of the checkpoint store: the checkpoints it passed over as torn or mismatched.
  void on_checkpoint_load(uint64_t skipped);

 private:
  struct stage_series {
    prometheus::Gauge *fill, *capacity, *ratio, *credits;
  };
  void refresh();

  std::shared_ptr<metrics::metrics_registry> registry_;
  std::shared_ptr<data::live_data_metrics> live_ = std::make_shared<data::live_data_metrics>();
  prometheus::Gauge& step_;
  prometheus::Counter& steps_;
  prometheus::Histogram& step_seconds_;
  prometheus::Gauge& tokens_per_second_;
  prometheus::Gauge& own_tokens_per_second_;
  prometheus::Gauge& compute_seconds_;
  prometheus::Gauge& step_imbalance_;
  prometheus::Gauge& cost_model_error_;
  prometheus::Gauge& data_wait_ratio_;
  prometheus::Gauge& loss_;
  prometheus::Counter& data_wait_seconds_;
  prometheus::Counter& allreduce_seconds_;
  prometheus::Counter& allreduce_bytes_;
  prometheus::Gauge& collective_shared_bytes_;
  prometheus::Gauge& control_records_kept_;
  std::array<prometheus::Counter*, 3> control_reports_{};  // dropped, overflowed, resent
  std::array<uint64_t, 3> control_reports_seen_{};
  prometheus::Counter& verify_failures_;
  prometheus::Gauge& host_memory_;
  prometheus::Gauge &compute_in_use_, &compute_peak_, &compute_budget_, &batch_memory_;
  prometheus::Gauge* threads_ = nullptr;
  std::array<stage_series, 3> stages_{};  // reader, decoder, tensor
  std::array<prometheus::Counter*, modality_count> samples_{}, decode_seconds_{};
  prometheus::Counter* downgrades_ = nullptr;
  prometheus::Counter* mismatched_names_ = nullptr;
  std::array<prometheus::Counter*, data::bad_reason_count> bad_{};
  metrics::metrics_registry::refresher_handle refresher_;  // last: it goes first
};

}  // namespace msomni::rank_worker
