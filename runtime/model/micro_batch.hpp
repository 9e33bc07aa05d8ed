// The unit of work a model trains on: B samples, each a run of image/frame patches followed
// by text tokens. The tensor stage of the data pipeline produces it, the rank worker feeds
// it to model::forward_backward. Header-only so plugins need no runtime symbols.
#pragma once

#include "core/modality.hpp"

#include <cstdint>
#include <memory_resource>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::model {

struct micro_batch {
  int64_t batch = 0;        // B
  int64_t max_patches = 0;  // P: patch slots per sample (rows past patch_counts[b] ignored)
  int64_t patch_dim = 0;    // patch_size * patch_size * 3, RGB in [0, 1], channel-last
  int64_t text_len = 0;     // T
  // [B, P, patch_dim]. In the memory the rank's data pipeline packs into (pinned host memory
  // on a CUDA rank, so the model uploads it asynchronously); a default-constructed batch
  // uses ordinary memory.
  std::pmr::vector<float> patches;
  std::vector<int32_t> patch_counts;   // [B]; 0 for text-only samples
  std::vector<int32_t> tokens;         // [B, T], see text_tokens.hpp
  std::vector<uint8_t> loss_mask;      // [B, T]; 1 = token t is a prediction target
  std::vector<modality> modalities;    // [B]

  // Text tokens the loss is taken over.
  int64_t target_tokens() const {
    int64_t n = 0;
    for (uint8_t m : loss_mask) n += m != 0;
    return n;
  }
  // Sequence positions fed to the model (patches plus text), for tokens/s.
  int64_t input_tokens() const {
    int64_t n = batch * text_len;
    for (int32_t c : patch_counts) n += c;
    return n;
  }

  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const {
    auto fail = [](const std::string& why) {
      throw std::invalid_argument("micro_batch: " + why);
    };
    if (batch <= 0 || text_len <= 0 || max_patches < 0 || patch_dim < 0)
      fail("dimensions must be positive (batch " + std::to_string(batch) + ", text_len " +
           std::to_string(text_len) + ", max_patches " + std::to_string(max_patches) + ")");
    auto expect = [&](const char* field, size_t have, int64_t want) {
      if (static_cast<int64_t>(have) != want)
        fail(std::string(field) + " has " + std::to_string(have) + " elements, expected " +
             std::to_string(want));
    };
    expect("patches", patches.size(), batch * max_patches * patch_dim);
    expect("patch_counts", patch_counts.size(), batch);
    expect("tokens", tokens.size(), batch * text_len);
    expect("loss_mask", loss_mask.size(), batch * text_len);
    expect("modalities", modalities.size(), batch);
    for (int64_t b = 0; b < batch; ++b) {
      const int32_t c = patch_counts[static_cast<size_t>(b)];
      if (c < 0 || c > max_patches)
        fail("sample " + std::to_string(b) + " has " + std::to_string(c) +
             " patches, outside [0, " + std::to_string(max_patches) + "]");
      if (modalities[static_cast<size_t>(b)] == modality::text && c != 0)
        fail("text sample " + std::to_string(b) + " carries " + std::to_string(c) + " patches");
    }
  }
};

}  // namespace msomni::model
