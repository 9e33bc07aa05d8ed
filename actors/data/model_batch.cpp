// to_model_batch (see model_batch.hpp).
#include "model_batch.hpp"

#include "model/text_tokens.hpp"

namespace msomni::data {

model::micro_batch to_model_batch(const micro_batch& in, std::pmr::memory_resource* memory) {
  const auto& s = in.shape;
  // The patches member is constructed in `memory` (a pmr vector keeps the memory it was built
  // with; assigning another vector to it would copy into its own).
  model::micro_batch mb{.batch = s.batch,
                        .max_patches = s.max_patches(),
                        .patch_dim = s.patch_dim(),
                        .text_len = s.max_tokens(),
                        .patches = std::pmr::vector<float>(in.patches.begin(), in.patches.end(), memory)};
  mb.tokens = in.tokens;
  mb.modalities = in.kinds;
  mb.patch_counts.reserve(size_t(s.batch));
  for (int64_t b = 0; b < s.batch; ++b) {
    int32_t count = 0;
    for (int64_t p = 0; p < mb.max_patches; ++p) count += in.patch_mask[static_cast<size_t>(b * mb.max_patches + p)];
    mb.patch_counts.push_back(count);
    model::append_text_loss_mask(in.tokens.data() + b * mb.text_len, static_cast<size_t>(mb.text_len), mb.loss_mask);
  }
  return mb;
}

}  // namespace msomni::data
