// What a batch asks of memory, in the terms of msg::batch_features: samples per modality,
// patches per kind, text tokens, the sequence length the model runs and the micro-batch size.
// Pure: computed from the model's micro-batch, cheap enough to run under the data hand-off's
// lock (one pass over the samples and their tokens).
#pragma once

#include "messages/scheduling_messages.hpp"
#include "model/micro_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace msomni::rank_worker {

msg::batch_features features_of(const model::micro_batch& b);

// Adds a micro-batch to its step's features: counts summed, seq_len and micro_batch the largest.
void add_micro_batch(msg::batch_features& step, const msg::batch_features& micro);

// The upcoming micro-batches as steps of `grad_accum` micro-batches each, at most `max_steps`;
// a step the data pipeline holds only part of is left out.
std::vector<msg::batch_features> steps_of(const std::vector<msg::batch_features>& micro_batches, int64_t grad_accum,
                                          size_t max_steps);

}  // namespace msomni::rank_worker
