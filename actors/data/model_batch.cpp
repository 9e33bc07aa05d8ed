// to_model_batch (see model_batch.hpp).
#include "model_batch.hpp"

#include "model/text_tokens.hpp"

#include <algorithm>

namespace msomni::data {

model::micro_batch to_model_batch(const micro_batch& in, std::pmr::memory_resource* memory) {
  const auto& s = in.shape;
  const int64_t B = s.batch, P = s.max_patches(), T = s.max_tokens(), D = s.patch_dim();
  // As long as its longest sample: patch slots no sample fills and text positions no
  // sample's tokens reach are cut (they are padding at the end of every row, which causal
  // attention never lets a real position see), so the model's work and memory follow the batch.
  std::vector<int32_t> counts(static_cast<size_t>(B), 0);
  int64_t used_p = 0, used_t = 1;
  for (int64_t b = 0; b < B; ++b) {
    int32_t count = 0;
    for (int64_t p = 0; p < P; ++p) count += in.patch_mask[static_cast<size_t>(b * P + p)];
    counts[static_cast<size_t>(b)] = count;
    used_p = std::max<int64_t>(used_p, count);
    for (int64_t t = T; t > used_t; --t)
      if (in.tokens[static_cast<size_t>(b * T + t - 1)] != model::token_pad) {
        used_t = t;
        break;
      }
  }
  model::micro_batch mb{.batch = B, .max_patches = used_p, .patch_dim = D, .text_len = used_t,
                        .patches = std::pmr::vector<float>(memory), .patch_counts = {}, .tokens = {},
                        .loss_mask = {}, .modalities = {}};
  // The patches are built in `memory` (a pmr vector keeps the memory it was built with;
  // assigning another vector to it would copy into its own).
  mb.patches.resize(static_cast<size_t>(B * used_p * D));
  for (int64_t b = 0; b < B; ++b)
    std::copy_n(in.patches.begin() + b * P * D, used_p * D, mb.patches.begin() + b * used_p * D);
  mb.tokens.resize(static_cast<size_t>(B * used_t));
  for (int64_t b = 0; b < B; ++b)
    std::copy_n(in.tokens.begin() + b * T, used_t, mb.tokens.begin() + b * used_t);
  mb.modalities = in.kinds;
  mb.patch_counts = std::move(counts);
  for (int64_t b = 0; b < B; ++b)
    model::append_text_loss_mask(mb.tokens.data() + b * used_t, static_cast<size_t>(used_t), mb.loss_mask);
  return mb;
}

}  // namespace msomni::data
