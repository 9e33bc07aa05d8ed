// What one sample costs the model, predicted from what the reader knows before decoding: its
// modality (so its patches: one frame's for an image, video_frames' for a video, none for
// text) and its caption's length in bytes (so its text tokens). A transformer's work per
// sample grows with its positions L linearly (projections, feed-forward) and quadratically
// (attention): cost = linear x L + quadratic x L^2, the weights from the model's widths. The
// unit is arbitrary (only ratios matter to the step balancer); calibration against measured
// times is batch_cost_model.hpp's. Pure.
#pragma once

#include "micro_batch.hpp"

#include "core/modality.hpp"

#include <cstdint>

namespace msomni::data {

struct cost_weights {
  double linear = 1.0;     // per position
  double quadratic = 0.0;  // per pair of positions
  bool operator==(const cost_weights&) const = default;
};

// A decoder transformer of width d_model and feed-forward width d_ff: per position and layer
// about 4 d^2 (attention projections) + 2 d d_ff (feed-forward) multiply-adds, and per pair of
// positions about 2 d (scores and their use).
cost_weights transformer_cost_weights(int64_t d_model, int64_t d_ff);

struct sample_shape {
  int64_t patches = 0;
  int64_t tokens = 0;
  int64_t positions() const { return patches + tokens; }
};

// The positions a sample fills: its patches and its tokens (BOS + caption bytes + EOS, cut to
// the shape's max_tokens).
sample_shape shape_of(modality kind, uint64_t caption_bytes, const batch_shape& shape);

double sample_cost(const sample_shape& s, const cost_weights& w);

}  // namespace msomni::data
