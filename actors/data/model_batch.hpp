// The data pipeline's micro-batch as the model's: patch counts from the patch mask (a
// sample's patches fill its first slots), loss targets from the byte tokens (after BOS up to
// and including EOS), the pixel scale kept as the pipeline delivers it. Padded to its longest
// sample, not to the shape's maximum: max_patches is the most patches any sample has and
// text_len the longest text up to its last non-PAD token, so a text-only batch runs a short
// sequence and a video batch a long one (and the rank's memory follows the batch). The patches are
// copied into `memory` (the rank's batch memory: pinned host memory on a CUDA rank, see
// kernels' make_batch_memory), so the model can upload them asynchronously.
#pragma once

#include "micro_batch.hpp"
#include "model/micro_batch.hpp"

#include <memory_resource>

namespace msomni::data {

model::micro_batch to_model_batch(const micro_batch& in,
                                  std::pmr::memory_resource* memory = std::pmr::get_default_resource());

}  // namespace msomni::data
