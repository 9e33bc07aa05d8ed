// The data pipeline's output: one micro-batch for a rank worker, as plain arrays. The model
// side has its own micro-batch type in runtime/model; a bridge copies or adopts these arrays.
// Shapes: B samples, P patch slots (video_frames * (image_size/patch_size)^2), T tokens
// (max_seq_len - P), patch_dim = patch_size^2 * 3. Pixels are scaled to [-1, 1].
#pragma once

#include "core/modality.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::data {

struct batch_shape {
  int64_t batch = 2;
  int64_t image_size = 32;
  int64_t patch_size = 8;
  int64_t video_frames = 2;
  int64_t max_seq_len = 256;

  int64_t patches_per_frame() const { return (image_size / patch_size) * (image_size / patch_size); }
  int64_t max_patches() const { return video_frames * patches_per_frame(); }
  int64_t patch_dim() const { return patch_size * patch_size * 3; }
  int64_t max_tokens() const { return max_seq_len - max_patches(); }
  void validate() const;  // throws std::invalid_argument with the offending numbers
  bool operator==(const batch_shape&) const = default;
};

struct micro_batch {
  batch_shape shape;
  std::vector<float> patches;       // [B, P, patch_dim]; zero where patch_mask is 0
  std::vector<uint8_t> patch_mask;  // [B, P]; 1 = a real patch
  std::vector<int32_t> tokens;      // [B, T]; token_pad where token_mask is 0
  std::vector<uint8_t> token_mask;  // [B, T]; 1 = a real token (loss is taken on these)
  std::vector<modality> kinds;      // [B]
  std::vector<uint8_t> downgraded;  // [B]; 1 = video decoded keyframe-only
  std::vector<uint8_t> replaced;    // [B]; 1 = the slot's own sample was bad, this is the next good one
  std::vector<std::string> keys;    // [B]; "<shard>/<key>" for logs and determinism checks
  uint64_t index = 0;               // global micro-batch index: global index of sample 0 / B
  bool operator==(const micro_batch&) const = default;
};

}  // namespace msomni::data
