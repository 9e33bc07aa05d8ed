// Patchify, normalise and pad samples into a micro_batch (see tensorizer.hpp).
#include "tensorizer.hpp"

#include "media_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace msomni::data {

void batch_shape::validate() const {
  if (batch <= 0 || image_size <= 0 || patch_size <= 0 || image_size % patch_size != 0 || video_frames <= 0)
    throw std::invalid_argument("batch shape: image_size " + std::to_string(image_size) + " must be a positive multiple of patch_size " +
                                std::to_string(patch_size) + ", batch and video_frames positive");
  if (max_tokens() < 2)
    throw std::invalid_argument("batch shape: max_seq_len " + std::to_string(max_seq_len) + " leaves " + std::to_string(max_tokens()) +
                                " text tokens after " + std::to_string(max_patches()) + " patches; need at least 2");
}

namespace {

// One frame (S x S x RGB bytes) -> patches_per_frame rows of patch_dim floats in [-1, 1].
void patchify(const batch_shape& s, const uint8_t* rgb, float* out) {
  const int64_t S = s.image_size, p = s.patch_size, grid = S / p;
  for (int64_t py = 0; py < grid; ++py)
    for (int64_t px = 0; px < grid; ++px) {
      float* row = out + (py * grid + px) * s.patch_dim();
      for (int64_t dy = 0; dy < p; ++dy) {
        const uint8_t* src = rgb + ((py * p + dy) * S + px * p) * 3;
        for (int64_t k = 0; k < p * 3; ++k) *row++ = float(src[k]) * (2.0f / 255.0f) - 1.0f;
      }
    }
}

}  // namespace

void pack_micro_batch_into(const batch_shape& s, const std::vector<decoded_sample>& samples, micro_batch& b) {
  if (int64_t(samples.size()) != s.batch)
    throw std::invalid_argument("pack_micro_batch: " + std::to_string(samples.size()) + " samples for batch " + std::to_string(s.batch));
  const int64_t B = s.batch, P = s.max_patches(), D = s.patch_dim(), T = s.max_tokens();
  const int64_t ppf = s.patches_per_frame();
  const size_t frame_bytes = size_t(s.image_size * s.image_size * 3);
  for (const auto& x : samples)
    if (x.bad) throw std::invalid_argument("pack_micro_batch: bad sample " + x.key);
  b.shape = s;
  // resize keeps a recycled buffer's capacity; the loop below overwrites every element.
  b.patches.resize(size_t(B * P * D));
  b.patch_mask.resize(size_t(B * P));
  b.tokens.resize(size_t(B * T));
  b.token_mask.resize(size_t(B * T));
  b.kinds.clear();
  b.downgraded.clear();
  b.replaced.clear();
  b.keys.resize(size_t(B));
  for (int64_t i = 0; i < B; ++i) {
    const decoded_sample& x = samples[size_t(i)];
    b.kinds.push_back(x.kind);
    b.downgraded.push_back(x.downgraded ? 1 : 0);
    b.replaced.push_back(x.replaced ? 1 : 0);
    b.keys[size_t(i)] = x.key;
    const int64_t frames = std::min<int64_t>(x.frames, s.video_frames);
    if (x.pixels.size() < size_t(frames) * frame_bytes) throw std::invalid_argument("pack_micro_batch: short pixels in " + x.key);
    float* base = b.patches.data() + i * P * D;
    for (int64_t f = 0; f < frames; ++f) {
      const uint8_t* rgb = x.pixels.data() + size_t(f) * frame_bytes;
      // A keyframe repeated in consecutive slots is converted once and copied.
      if (f > 0 && std::memcmp(rgb, rgb - frame_bytes, frame_bytes) == 0)
        std::memcpy(base + f * ppf * D, base + (f - 1) * ppf * D, size_t(ppf * D) * sizeof(float));
      else
        patchify(s, rgb, base + f * ppf * D);
    }
    std::fill(base + frames * ppf * D, base + P * D, 0.0f);
    std::fill_n(b.patch_mask.begin() + i * P, frames * ppf, uint8_t{1});
    std::fill(b.patch_mask.begin() + i * P + frames * ppf, b.patch_mask.begin() + (i + 1) * P, uint8_t{0});
    const int64_t n = std::min<int64_t>(int64_t(x.tokens.size()), T);
    std::copy_n(x.tokens.begin(), n, b.tokens.begin() + i * T);
    std::fill(b.tokens.begin() + i * T + n, b.tokens.begin() + (i + 1) * T, token_pad);
    std::fill_n(b.token_mask.begin() + i * T, n, uint8_t{1});
    std::fill(b.token_mask.begin() + i * T + n, b.token_mask.begin() + (i + 1) * T, uint8_t{0});
  }
}

micro_batch pack_micro_batch(const batch_shape& s, const std::vector<decoded_sample>& samples) {
  micro_batch b;
  pack_micro_batch_into(s, samples, b);
  return b;
}

}  // namespace msomni::data
