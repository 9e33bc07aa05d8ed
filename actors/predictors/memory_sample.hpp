// One memory sample of a training rank, as the memory watermark predictor sees it: the
// step's peak and end-of-step bytes, the batch that produced them, and the batches the data
// pipeline already holds for the next steps. Plain data: no clock, no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace msomni::predict {

// What the data pipeline knows about one batch before it runs.
struct batch_features {
  int64_t image_samples = 0;
  int64_t video_samples = 0;
  int64_t text_samples = 0;
  int64_t image_patches = 0;
  int64_t video_patches = 0;
  int64_t text_tokens = 0;
  int64_t seq_len = 0;      // the padded sequence length S the model's workspace is sized for
  int64_t micro_batch = 0;  // rows per micro-batch

  bool operator==(const batch_features&) const = default;
};

// A batch as numbers for the feature-based models. The model's activations grow with the
// tokens (micro_batch x S) and its attention scores with micro_batch x S^2, so both are
// features; the raw counts follow. Scaled to keep every column near 1 for typical batches.
inline constexpr size_t batch_feature_count = 8;
std::array<double, batch_feature_count> batch_feature_vector(const batch_features& b);

struct memory_sample {
  int64_t step = 0;
  double t_ms = 0;            // since the rank started
  int64_t in_use_bytes = 0;   // at the step's end
  int64_t peak_bytes = 0;     // the step's peak
  batch_features batch;       // the batch this step ran
  std::vector<batch_features> upcoming;  // the next batches already prefetched, nearest first
  int64_t world_size = 0;
  std::string event;          // "", "resize" or "resume"
};

}  // namespace msomni::predict
