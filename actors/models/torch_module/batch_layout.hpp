// Where a micro-batch's fields lie in the memory shared with the torch worker, and writing
// them there. Each field starts on a 64-byte boundary, in this order: patches float32
// [B, P, D], patch_counts int32 [B], tokens int32 [B, T], loss_mask uint8 [B, T], modalities
// uint8 [B]. The worker wraps each as a tensor in place (msomni_torch/batch.py).
#pragma once

#include "model/micro_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

namespace msomni::models {

struct batch_layout {
  int64_t patches = 0, patch_counts = 0, tokens = 0, loss_mask = 0, modalities = 0;
  int64_t bytes = 0;  // the whole, rounded up to the alignment
};

inline constexpr int64_t batch_field_alignment = 64;

batch_layout layout_of(const model::micro_batch& mb);

// Copies `mb` into `memory` (at least layout.bytes long) at `layout`'s offsets.
void write_batch(const model::micro_batch& mb, const batch_layout& layout, std::span<std::byte> memory);

// The request fields that tell the worker the batch's shape and offsets: "dims" [B, P, D, T]
// and "offsets".
nlohmann::json describe_batch(const model::micro_batch& mb, const batch_layout& layout);

// The seed the worker gives every generator before the module's forward on `mb` (dropout): a
// function of the job seed, the optimizer step and the micro-batch's contents (tokens, patch
// counts, patches), so the same batch at the same step draws the same numbers whichever rank
// runs it, at whichever place in its step, in any world size and after any resume. Below 2^63.
uint64_t micro_batch_seed(uint64_t job_seed, int64_t optimizer_step, const model::micro_batch& mb);

}  // namespace msomni::models
