// The tensor stage's packing: decoded samples -> one micro_batch. Pure arithmetic on the
// samples given; a downgraded video's repeated keyframe is patchified once and copied, which
// is what makes keyframe-only samples cheaper for this stage too.
#pragma once

#include "micro_batch.hpp"
#include "sample.hpp"

#include <vector>

namespace msomni::data {

// Packs exactly shape.batch good samples (throws std::invalid_argument otherwise).
micro_batch pack_micro_batch(const batch_shape& shape, const std::vector<decoded_sample>& samples);
// The same into `out`, reusing its buffers, so a recycled batch costs no allocation, no page
// faults and no zero pass. When `out` already has this shape, it must be a batch this function
// packed and nobody changed since: its patches are taken to be zero wherever its patch_mask is
// 0, and only padding rows that were real patches before are zeroed again. Any other `out`
// (empty, moved-from, another shape) is written in full.
void pack_micro_batch_into(const batch_shape& shape, const std::vector<decoded_sample>& samples, micro_batch& out);
// pack_micro_batch_into one slot at a time, for a driver that packs each sample as soon as
// its slot is known (its pixels are still in cache then): pack_begin prepares `out` (the same
// rule for recycled and other batches), then pack_slot writes every element of slot `slot`
// from `sample` (a good sample; throws std::invalid_argument otherwise). Once every slot is
// written the batch is bit-identical to pack_micro_batch_into of the same samples.
void pack_begin(const batch_shape& shape, micro_batch& out);
void pack_slot(const batch_shape& shape, uint32_t slot, const decoded_sample& sample, micro_batch& out);

}  // namespace msomni::data
