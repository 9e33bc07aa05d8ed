// Which rank and micro-batch takes each sample of one optimizer step, so that every rank has
// about the same predicted work (in data-parallel training each step waits for the slowest
// rank). Every rank computes the same answer from the same costs: no coordinator, no message.
//
// Longest processing time first under equal counts: the samples, most expensive first (ties:
// the lower global offset), each go to the rank with the least work so far that still has room
// for one (ties: the lower rank); then pairs of samples are swapped between the most and the
// least loaded rank while a swap narrows their gap. Each rank's samples are then sorted by cost
// and cut into micro-batches in that order, so samples of similar length share a micro-batch
// (less padding). The step's set of samples is never changed: only where each one goes.
// Pure.
#pragma once

#include <cstdint>
#include <vector>

namespace msomni::data {

// `costs[o]` is the predicted cost of the step's sample at offset o (o < world x grad_accum x
// micro_batch). Returns, per rank, its offsets in consumption order: micro-batch 0's
// micro_batch offsets, then micro-batch 1's, ...
std::vector<std::vector<uint64_t>> balance_step(const std::vector<double>& costs, uint32_t world, int64_t grad_accum,
                                                int64_t micro_batch);

// Today's dealing: micro-step k of rank r takes offsets (k x world + r) x micro_batch + [0, micro_batch).
std::vector<std::vector<uint64_t>> deal_step(uint32_t world, int64_t grad_accum, int64_t micro_batch);

// The slowest rank's predicted work over the mean (1 when even; 1 for an empty step).
double predicted_imbalance(const std::vector<double>& costs, const std::vector<std::vector<uint64_t>>& by_rank);

}  // namespace msomni::data
