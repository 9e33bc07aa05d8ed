// Messages of the training loop: per-step records and checkpoint commands.
// Plain structs, no CAF: pure cores include this header; what CAF needs to carry them
// (their inspect overloads) is in training_messages_inspect.hpp, which the catalog includes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::msg {

// Bad samples of one reason ("corrupt_image", "too_large", ...; the data pipeline's names)
// met in a step by all ranks together. Part of step_record.
struct bad_sample_count {
  std::string reason;
  uint64_t count = 0;
  bool operator==(const bad_sample_count&) const = default;
};

// NaN and the infinities do not survive the wire (CAF packs doubles as finite numbers), so a
// non-finite value travels as a kind beside the number.
enum class number_kind : uint8_t { finite = 0, nan = 1, positive_infinity = 2, negative_infinity = 3 };
inline number_kind kind_of(double v) {
  if (v != v) return number_kind::nan;
  if (v > 1.7976931348623157e308) return number_kind::positive_infinity;
  if (v < -1.7976931348623157e308) return number_kind::negative_infinity;
  return number_kind::finite;
}
// The value a (number, kind) pair stands for.
inline double value_of(double v, number_kind kind) {
  switch (kind) {
    case number_kind::nan: return __builtin_nan("");
    case number_kind::positive_infinity: return __builtin_inf();
    case number_kind::negative_infinity: return -__builtin_inf();
    default: return v;
  }
}

// rank worker -> orchestrator/scheduler/metrics, one per optimizer step.
struct step_record {
  uint64_t step = 0;
  uint32_t world_size = 0;
  double loss = 0;
  int64_t step_time_ns = 0;
  double tokens_per_s = 0;
  int64_t data_wait_ns = 0;
  uint64_t downgraded_samples = 0;
  int64_t checkpoint_ns = 0;  // the rank stood still for a checkpoint after this step's update
  std::vector<bad_sample_count> bad_samples;  // all ranks, this step; only reasons that occurred
  double grad_norm = 0;            // of the all-reduced gradient, before clipping (may be non-finite)
  bool optimizer_skipped = false;  // a non-finite gradient: the update was not applied
  number_kind loss_kind = number_kind::finite;  // of loss (value_of(loss, loss_kind) is the loss)
  number_kind grad_norm_kind = number_kind::finite;  // of grad_norm
  uint64_t epoch = 0;              // the membership epoch the step was taken in
  uint64_t mismatched_names = 0;   // all ranks, this step: good samples whose names say another format
  double compute_ms_max = 0;       // the slowest rank's forward and backward time this step
  double compute_ms_mean = 0;      // the ranks' mean of it (max / mean: the step's imbalance)
  bool operator==(const step_record&) const = default;
};

// One distinct bad (or mismatched-name) sample a rank drew: its key ("<shard>/<member key>"),
// reason, cause in words, and how many more times it was drawn since the rank last said.
struct bad_sample_seen {
  std::string key;
  std::string reason;
  std::string cause;
  uint64_t draws = 0;
  bool operator==(const bad_sample_seen&) const = default;
};

// rank -> orchestrator, after a step in which the rank drew bad samples: which ones (at most
// the data pipeline's listing bound of distinct samples per rank over the job).
struct bad_samples_seen {
  uint32_t rank = 0;
  uint64_t step = 0;
  std::vector<bad_sample_seen> samples;
  bool operator==(const bad_samples_seen&) const = default;
};

// checkpoint writer -> orchestrator: one shard written (or failed, with why).
struct checkpoint_done {
  uint64_t step = 0;
  uint32_t rank = 0;
  bool ok = false;
  uint64_t bytes = 0;
  uint64_t checksum = 0;
  std::string error;
  bool operator==(const checkpoint_done&) const = default;
};

}  // namespace msomni::msg
