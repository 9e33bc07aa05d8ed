// Memory traces built in code for the predictor tests: a rank whose peak follows its batch
// mix (images, videos and text batches of different sequence lengths) the way a model's
// workspace does (fixed bytes + bytes per token + bytes per attention score), with a small
// deterministic wobble. Only for checking the predictors' math; not an evaluation corpus.
#pragma once

#include "memory_sample.hpp"

#include <cstdint>
#include <vector>

namespace msomni::testing {

inline predict::batch_features sawtooth_batch(int64_t step) {
  predict::batch_features b;
  b.micro_batch = 4;
  switch ((step * 7 + step / 5) % 4) {  // a mix that is not a plain period
    case 0:  // text only
      b.text_samples = 4, b.text_tokens = 4 * 120, b.seq_len = 128;
      break;
    case 1:  // images
      b.image_samples = 3, b.text_samples = 1, b.image_patches = 3 * 256, b.text_tokens = 4 * 40, b.seq_len = 320;
      break;
    case 2:  // videos
      b.video_samples = 2, b.image_samples = 1, b.image_patches = 256, b.video_patches = 2 * 900, b.text_tokens = 3 * 30,
      b.seq_len = 960;
      break;
    default:  // mixed
      b.image_samples = 2, b.text_samples = 2, b.image_patches = 2 * 256, b.text_tokens = 2 * 200, b.seq_len = 512;
      break;
  }
  return b;
}

inline int64_t sawtooth_peak_bytes(const predict::batch_features& b, int64_t step) {
  const int64_t tokens = b.micro_batch * b.seq_len;
  const int64_t wobble = ((step * 2654435761LL) % 1000) * (int64_t{1} << 16);  // up to ~64 MiB
  return (int64_t{6} << 30) + tokens * (int64_t{1} << 20) + tokens * b.seq_len * 2048 + wobble;
}

inline std::vector<predict::memory_sample> sawtooth_trace(int64_t steps, size_t known_ahead = 3) {
  std::vector<predict::memory_sample> out;
  for (int64_t t = 0; t < steps; ++t) {
    predict::memory_sample s;
    s.step = t;
    s.t_ms = 100.0 * static_cast<double>(t);
    s.batch = sawtooth_batch(t);
    s.peak_bytes = sawtooth_peak_bytes(s.batch, t);
    s.in_use_bytes = (int64_t{5} << 30) + (t % 3) * (int64_t{1} << 20);
    for (size_t k = 1; k <= known_ahead; ++k) s.upcoming.push_back(sawtooth_batch(t + static_cast<int64_t>(k)));
    s.world_size = 2;
    out.push_back(s);
  }
  return out;
}

}  // namespace msomni::testing
