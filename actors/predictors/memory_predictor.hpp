// The interface every memory predictor implements (baselines and learned models alike), so
// the forecast core, the evaluation and the tool treat them the same. A predictor sees the
// rank's samples one at a time and forecasts the peak bytes of each of the next steps,
// knowing the features of the batches the pipeline already holds. Implementations keep
// bounded state (a window of at most `window` samples) and are deterministic.
#pragma once

#include "memory_sample.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace msomni::predict {

struct memory_forecast {
  std::vector<double> peak_bytes;  // one per step ahead, nearest first
  // What a reservation for the horizon must cover: at least the largest of peak_bytes (a
  // predictor may forecast the horizon's max on its own, which can be higher).
  double max_bytes = 0;
};

class memory_predictor {
 public:
  virtual ~memory_predictor() = default;
  virtual std::string name() const = 0;
  virtual void observe(const memory_sample& s) = 0;
  // `upcoming` may be shorter than `horizon` (or empty): later steps run unknown batches.
  // Before the first observation every forecast is 0.
  virtual memory_forecast forecast(size_t horizon, std::span<const batch_features> upcoming) const = 0;
};

// Fills max_bytes from peak_bytes.
memory_forecast finish_forecast(std::vector<double> peak_bytes);

}  // namespace msomni::predict
