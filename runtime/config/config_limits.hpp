// The allowed range of every numeric config key, named once: the schema checks a file and
// --set against these, and a program flag that sets the same thing (msomni-sched
// --idle-threshold, msomni scale-down --replicas, ...) is checked against the same limit.
#pragma once

#include <cstdint>
#include <limits>

namespace msomni::config::limits {

// Inclusive bounds.
template <class T>
struct range {
  T min;
  T max;
};

inline constexpr int64_t big = int64_t{1} << 40;  // "any count a run could reach"

namespace model {
inline constexpr range<int64_t> d_model{8, 65536};
inline constexpr range<int64_t> n_layers{1, 1024};
inline constexpr range<int64_t> n_heads{1, 1024};
inline constexpr range<int64_t> d_ff{8, 1 << 20};
inline constexpr range<int64_t> image_size{8, 4096};
inline constexpr range<int64_t> patch_size{2, 512};
inline constexpr range<int64_t> video_frames{1, 64};
inline constexpr range<int64_t> max_seq_len{8, 1 << 20};
inline constexpr range<int64_t> vocab_size{260, 1 << 20};
}  // namespace model

namespace data {
inline constexpr range<double> source_weight{0.0, 1e6};
}  // namespace data

namespace training {
inline constexpr range<int64_t> global_batch{1, 1 << 24};
inline constexpr range<int64_t> micro_batch{1, 1 << 20};
inline constexpr range<int64_t> grad_accum{1, 1 << 16};
inline constexpr range<int64_t> steps{1, big};
inline constexpr range<double> lr{1e-9, 10.0};
inline constexpr range<int64_t> seed{0, std::numeric_limits<int64_t>::max()};
inline constexpr range<double> weight_decay{0.0, 1.0};
inline constexpr range<double> grad_clip{0.0, 1e6};
inline constexpr range<int64_t> warmup_steps{0, big};
inline constexpr range<int64_t> max_nonfinite_steps{1, 1 << 20};
inline constexpr range<double> loss_spike_factor{0.0, 1e6};
inline constexpr range<int64_t> threads{0, 1024};  // 0: a share of the node's hardware threads
}  // namespace training

namespace elasticity {
inline constexpr range<int64_t> replicas{1, 65536};  // also min_replicas and max_replicas
inline constexpr range<double> grace_period_s{0.0, 86400.0};
inline constexpr range<double> heartbeat_interval_s{0.01, 3600.0};
inline constexpr range<int64_t> heartbeat_misses{1, 100};
inline constexpr range<double> utilization{0.0, 1.0};   // scale_up/scale_down_utilization
inline constexpr range<double> sustain_s{0.0, 86400.0};  // scale_up/scale_down_sustain_s
inline constexpr range<double> autoscale_cooldown_s{0.0, 86400.0};
}  // namespace elasticity

namespace checkpoint {
inline constexpr range<int64_t> interval_steps{1, big};
inline constexpr range<int64_t> keep{1, 1000};
inline constexpr range<int64_t> zstd_level{-7, 22};
inline constexpr range<int64_t> zstd_threads{0, 256};
inline constexpr range<int64_t> max_consecutive_failures{1, big};
}  // namespace checkpoint

namespace memory {
inline constexpr range<int64_t> sequence_length{2, 100000};
inline constexpr range<int64_t> horizon_steps{1, 10000};
inline constexpr range<double> sample_interval_ms{1.0, 3.6e6};
inline constexpr range<double> safety_margin_gb{0.0, 1024.0};
inline constexpr range<int64_t> pca_dims{1, 4096};
inline constexpr range<double> device_memory_gb{0.001, 65536.0};  // a few MB: a CPU test of the budget
}  // namespace memory

namespace io {
inline constexpr range<int64_t> prefetch_depth{1, 1024};
inline constexpr range<int64_t> decode_workers{1, 1024};
inline constexpr range<int64_t> queue_capacity{1, 1 << 20};
inline constexpr range<double> max_data_wait_ms{0.0, 3.6e6};
inline constexpr range<int64_t> max_sample_bytes{int64_t{4} << 10, int64_t{64} << 30};
inline constexpr range<int64_t> max_image_pixels{64, int64_t{1} << 34};
inline constexpr range<int64_t> max_video_pixels{64, int64_t{1} << 34};
inline constexpr range<double> modality_weight{0.0, 1e6};
inline constexpr range<int64_t> cache_bytes{0, int64_t{1} << 50};
inline constexpr range<double> remote_request_timeout_ms{100.0, 3.6e6};
inline constexpr range<double> remote_give_up_s{1.0, 7 * 86400.0};
inline constexpr range<double> remote_backoff_max_ms{1.0, 600000.0};
inline constexpr range<int64_t> remote_prefetch{0, 65536};
}  // namespace io

namespace scheduler {
inline constexpr range<int64_t> step_window{2, 1 << 20};
inline constexpr range<double> idle_threshold{0.0, 1.0};
inline constexpr range<double> safety_factor{0.0, 100.0};
inline constexpr range<double> drain_period_s{0.0, 86400.0};
inline constexpr range<double> best_effort_drain_s{0.0, 3600.0};
inline constexpr range<double> min_run_window_s{0.0, 30 * 86400.0};
inline constexpr range<double> reservation_window_s{0.001, 86400.0};
inline constexpr range<double> critical_slowdown_budget{0.0, 1.0};
inline constexpr range<int64_t> queue_capacity{1, 1 << 24};
inline constexpr range<double> min_confidence{0.0, 1.0};
inline constexpr range<double> critical_peak_memory_s{0.0, 365 * 86400.0};
inline constexpr range<double> critical_reserve_factor{0.0, 100.0};
}  // namespace scheduler

namespace cluster {
inline constexpr range<int64_t> port{0, 65535};  // control_port (0: any free one), metrics_port (0: off)
inline constexpr range<int64_t> node_slots{1, 1024};
// The scheduler's cluster shape, which msomni-sched and msomni-sim take as flags.
inline constexpr range<int64_t> gpus{1, 1 << 20};
inline constexpr range<int64_t> gpus_per_node{1, 1024};
inline constexpr range<int64_t> nodes_per_switch{1, 1 << 16};
}  // namespace cluster

namespace control {
inline constexpr range<int64_t> lease_ttl_s{2, 300};
}  // namespace control

}  // namespace msomni::config::limits
