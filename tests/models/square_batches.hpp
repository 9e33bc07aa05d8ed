// Deterministic in-memory training data for model tests: coloured squares on a dark
// background with captions naming the colour ("a red square"), two-frame videos of a
// square moving right ("a red square moving"), and short text-only samples. Everything is
// a pure function of the seed, so two runs see the same batches.
#pragma once

#include "config/job_config.hpp"
#include "core/rng.hpp"
#include "model/micro_batch.hpp"
#include "model/text_tokens.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace msomni::test {

class square_batches {
 public:
  square_batches(const config::model_section& m, int64_t batch, int64_t text_len, uint64_t seed)
      : image_(m.image_size), patch_(m.patch_size), frames_(m.video_frames), batch_(batch),
        text_len_(text_len), rng_(rng_stream::derive(seed, "test.squares")) {}

  int64_t patches_per_frame() const { return (image_ / patch_) * (image_ / patch_); }
  int64_t patch_dim() const { return patch_ * patch_ * 3; }

  model::micro_batch next() {
    model::micro_batch mb;
    mb.batch = batch_;
    mb.max_patches = frames_ * patches_per_frame();
    mb.patch_dim = patch_dim();
    mb.text_len = text_len_;
    mb.patches.assign(static_cast<size_t>(batch_ * mb.max_patches * mb.patch_dim), 0.0f);
    for (int64_t b = 0; b < batch_; ++b) {
      const int kind = static_cast<int>(counter_++ % 3);  // image, video, text in turn
      const size_t colour = rng_.below(colours().size());
      const std::string name = colours()[colour].name;
      std::string caption;
      int32_t count = 0;
      if (kind == 2) {
        mb.modalities.push_back(modality::text);
        caption = "the colour " + name;
      } else {
        const int64_t frames = kind == 0 ? 1 : frames_;
        mb.modalities.push_back(kind == 0 ? modality::image : modality::video);
        const int64_t side = image_ / 2;
        const int64_t y0 = static_cast<int64_t>(rng_.below(static_cast<uint64_t>(image_ - side + 1)));
        const int64_t x0 = static_cast<int64_t>(rng_.below(static_cast<uint64_t>(image_ - side + 1)));
        for (int64_t f = 0; f < frames; ++f) {
          const int64_t shift = std::min<int64_t>(x0 + f * patch_, image_ - side);
          draw_frame(colours()[colour].rgb, y0, shift, side,
                     mb.patches.data() + (b * mb.max_patches + f * patches_per_frame()) * mb.patch_dim);
        }
        count = static_cast<int32_t>(frames * patches_per_frame());
        caption = "a " + name + " square" + (kind == 1 ? " moving" : "");
      }
      mb.patch_counts.push_back(count);
      const auto tokens = model::encode_text(caption, text_len_);
      const auto mask = model::text_loss_mask(tokens);
      mb.tokens.insert(mb.tokens.end(), tokens.begin(), tokens.end());
      mb.loss_mask.insert(mb.loss_mask.end(), mask.begin(), mask.end());
    }
    return mb;
  }

 private:
  struct colour {
    const char* name;
    std::array<float, 3> rgb;
  };
  static const std::vector<colour>& colours() {
    static const std::vector<colour> c = {{"red", {0.9f, 0.1f, 0.1f}},   {"green", {0.1f, 0.8f, 0.2f}},
                                          {"blue", {0.1f, 0.2f, 0.9f}},  {"yellow", {0.9f, 0.9f, 0.1f}},
                                          {"white", {0.95f, 0.95f, 0.95f}}, {"purple", {0.6f, 0.1f, 0.7f}}};
    return c;
  }

  // Writes one frame as patches (row-major patch grid, channel-last inside a patch).
  void draw_frame(const std::array<float, 3>& rgb, int64_t y0, int64_t x0, int64_t side,
                  float* out) const {
    const int64_t grid = image_ / patch_;
    for (int64_t y = 0; y < image_; ++y)
      for (int64_t x = 0; x < image_; ++x) {
        const bool inside = y >= y0 && y < y0 + side && x >= x0 && x < x0 + side;
        const int64_t p = (y / patch_) * grid + x / patch_;
        float* px = out + p * patch_dim() + ((y % patch_) * patch_ + x % patch_) * 3;
        for (int c = 0; c < 3; ++c) px[c] = inside ? rgb[static_cast<size_t>(c)] : 0.05f;
      }
  }

  int64_t image_, patch_, frames_, batch_, text_len_;
  rng_stream rng_;
  uint64_t counter_ = 0;
};

// A small fuyu-tiny configuration the tests train in well under a second per 100 steps.
inline config::model_section tiny_model_config() {
  config::model_section m;
  m.d_model = 32;
  m.n_layers = 2;
  m.n_heads = 2;
  m.d_ff = 64;
  m.image_size = 16;
  m.patch_size = 4;
  m.video_frames = 2;
  m.max_seq_len = 64;
  m.vocab_size = 260;
  return m;
}

}  // namespace msomni::test
