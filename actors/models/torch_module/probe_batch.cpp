// The probe micro-batch (see probe_batch.hpp).
#include "torch_module/probe_batch.hpp"

#include "core/rng.hpp"
#include "model/text_tokens.hpp"

#include <algorithm>
#include <string>

namespace msomni::models {

model::micro_batch make_probe_batch(const config::job_config& cfg) {
  const auto& m = cfg.model;
  const int64_t side = m.image_size / std::max<int64_t>(1, m.patch_size);
  const int64_t per_frame = side * side;
  model::micro_batch mb;
  mb.batch = cfg.training.micro_batch;
  mb.max_patches = per_frame * m.video_frames;
  mb.patch_dim = m.patch_size * m.patch_size * 3;
  mb.text_len = std::max<int64_t>(2, m.max_seq_len - mb.max_patches);
  auto rng = rng_stream::derive(static_cast<uint64_t>(cfg.training.seed), "model.torch.probe");
  mb.patches.resize(static_cast<size_t>(mb.batch * mb.max_patches * mb.patch_dim));
  for (int64_t b = 0; b < mb.batch; ++b) {
    const modality kind = b % 3 == 0 ? modality::video : b % 3 == 1 ? modality::image : modality::text;
    const int64_t count = kind == modality::video ? mb.max_patches : kind == modality::image ? per_frame : 0;
    mb.modalities.push_back(kind);
    mb.patch_counts.push_back(static_cast<int32_t>(count));
    for (int64_t i = 0; i < count * mb.patch_dim; ++i)
      mb.patches[static_cast<size_t>(b * mb.max_patches * mb.patch_dim + i)] = static_cast<float>(rng.uniform());
    // Text that fills the row: every text position is a target, up to the EOS.
    std::string text;
    while (static_cast<int64_t>(text.size()) + 2 < mb.text_len) text += "a " + std::string(to_string(kind)) + " probe. ";
    const auto tokens = model::encode_text(text, mb.text_len);
    mb.tokens.insert(mb.tokens.end(), tokens.begin(), tokens.end());
    model::append_text_loss_mask(tokens.data(), tokens.size(), mb.loss_mask);
  }
  return mb;
}

}  // namespace msomni::models
