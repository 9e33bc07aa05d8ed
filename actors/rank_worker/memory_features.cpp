// memory_features (see memory_features.hpp).
#include "memory_features.hpp"

#include "model/text_tokens.hpp"

#include <algorithm>

namespace msomni::rank_worker {

msg::batch_features features_of(const model::micro_batch& b) {
  msg::batch_features f;
  for (size_t i = 0; i < b.modalities.size(); ++i) {
    const auto patches = i < b.patch_counts.size() ? static_cast<uint64_t>(std::max(b.patch_counts[i], 0)) : 0;
    switch (b.modalities[i]) {
      case modality::image: ++f.image_samples, f.image_patches += patches; break;
      case modality::video: ++f.video_samples, f.video_patches += patches; break;
      default: ++f.text_samples; break;
    }
  }
  for (const int32_t t : b.tokens) f.text_tokens += t != model::token_pad;
  f.seq_len = static_cast<uint32_t>(std::max<int64_t>(0, b.max_patches + b.text_len));
  f.micro_batch = static_cast<uint32_t>(std::max<int64_t>(0, b.batch));
  return f;
}

void add_micro_batch(msg::batch_features& step, const msg::batch_features& micro) {
  step.image_samples += micro.image_samples;
  step.video_samples += micro.video_samples;
  step.text_samples += micro.text_samples;
  step.image_patches += micro.image_patches;
  step.video_patches += micro.video_patches;
  step.text_tokens += micro.text_tokens;
  step.seq_len = std::max(step.seq_len, micro.seq_len);
  step.micro_batch = std::max(step.micro_batch, micro.micro_batch);
}

std::vector<msg::batch_features> steps_of(const std::vector<msg::batch_features>& micro_batches, int64_t grad_accum,
                                          size_t max_steps) {
  std::vector<msg::batch_features> out;
  const size_t per_step = static_cast<size_t>(std::max<int64_t>(1, grad_accum));
  for (size_t first = 0; first + per_step <= micro_batches.size() && out.size() < max_steps; first += per_step) {
    msg::batch_features step;
    for (size_t k = first; k < first + per_step; ++k) add_micro_batch(step, micro_batches[k]);
    out.push_back(step);
  }
  return out;
}

}  // namespace msomni::rank_worker
