// Making a micro-batch fit the memory a forecast leaves it. Pure: a batch and numbers in, a
// plan (and the parts it names) out; no clock, thread or file.
//
// The memory watermark predictor forecasts the peak of a coming step; when the peak plus the
// safety margin passes the device, the rank is told the forecast, the budget (device less the
// margin) and the step's batch as the forecast saw it. The model's activation estimate of that
// batch apportions the forecast: what is not the batch's activations (weights, optimizer,
// buffers) stays, so a part of the batch may take
//   allow = budget - max(0, forecast - activations(batch))
// of activations. A rank that can measure what stays (its memory account once the model let
// its last batch's buffers go) gives it as `resident_bytes`, and that exact figure replaces the
// forecast's share: allow = budget - resident. A micro-batch within `allow` runs as it is. One that is not runs as parts:
// its samples, longest first, packed greedily into the fewest parts whose own padded length
// keeps activations(part) within `allow`. Every sample still trains in the same optimizer
// step, and each part's gradient is scaled by its share of the micro-batch's loss targets, so
// the step's gradient is the unsplit one (up to rounding): no sample is dropped or moved to
// another step. Splitting changes no data, so it aims at the budget; cutting a video to its
// first frame (its keyframe) changes what trains, so only a video that alone would pass the
// device itself (`cut_allow`: the same with the device in place of the budget) is cut, and
// counted. A sample over `allow` even so runs alone, and the plan says it does not fit.
#pragma once

#include "model/micro_batch.hpp"

#include <cstdint>
#include <functional>
#include <memory_resource>
#include <string>
#include <vector>

namespace msomni::rank_worker {

// Activation bytes of a micro-batch of `rows` samples padded to `seq_len` positions
// (model::trainable_model::estimate_memory(...).activation_bytes).
using activation_bytes_fn = std::function<int64_t(int64_t rows, int64_t seq_len)>;

// What a fit request says of one step.
struct fit_target {
  double forecast_bytes = 0;     // the step's forecast peak
  double budget_bytes = 0;       // device less the safety margin
  double device_bytes = 0;       // the device itself (0: the budget)
  double resident_bytes = 0;     // measured: what stays beside the batch (0: not measured)
  int64_t forecast_rows = 0;     // the step's batch as the forecast saw it: rows per micro-batch
  int64_t forecast_seq_len = 0;  // and its padded length
};

// Activation bytes a part may take under `t`'s budget (may be <= 0: then nothing fits), and
// under its device (what decides a keyframe cut).
double activation_allowance(const fit_target& t, const activation_bytes_fn& activations);
double cut_allowance(const fit_target& t, const activation_bytes_fn& activations);

struct fit_plan {
  // Sample indices of each part, in the micro-batch's order within a part; parts longest first.
  // One part holding every sample: the micro-batch runs as it is.
  std::vector<std::vector<int64_t>> parts;
  std::vector<int64_t> keyframe_cuts;  // videos cut to their first frame, ascending
  int64_t keyframe_patches = 0;        // the patches a cut video keeps (one frame's)
  bool fits = true;                    // false: some part is over the allowance even so
  bool changed() const { return parts.size() > 1 || !keyframe_cuts.empty(); }
};

// `patches_per_frame`: patches of one video frame (a cut keeps that many). A video is cut only
// when alone it is over `cut_allow_bytes` (at least `allow_bytes`).
fit_plan plan_fit(const model::micro_batch& mb, double allow_bytes, double cut_allow_bytes,
                  const activation_bytes_fn& activations, int64_t patches_per_frame);

// The parts of `mb` that `plan` names, each padded to its own longest sample (patches in
// `memory`), with the plan's keyframe cuts applied. Throws std::invalid_argument when the plan
// does not cover every sample exactly once.
std::vector<model::micro_batch> split_micro_batch(const model::micro_batch& mb, const fit_plan& plan,
                                                  std::pmr::memory_resource* memory);

// "2 parts (3+1 samples), 1 video cut to its keyframe" (or "as is").
std::string describe(const fit_plan& plan);

}  // namespace msomni::rank_worker
