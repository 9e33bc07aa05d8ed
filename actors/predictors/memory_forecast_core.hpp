// The memory watermark forecast core of one rank: takes the rank's samples one at a time,
// keeps the last `sequence_length` of them, and forecasts the peak of each of the next
// `horizon_steps` steps (and the max over them) with the configured predictor, from the batches
// the pipeline already holds. Pure: no clock, no threads, no files.
#pragma once

#include "memory_baselines.hpp"
#include "memory_lstm_predictor.hpp"
#include "memory_predictor.hpp"

#include <deque>
#include <memory>
#include <vector>

namespace msomni::predict {

// The [memory] keys the core and its predictors read.
struct memory_forecast_settings {
  size_t sequence_length = 200;
  size_t horizon_steps = 10;
  size_t pca_dims = 16;
  uint64_t seed = 1;
};

// Every predictor the evaluation compares, the baselines first. The analytic one only when
// an estimate is given.
std::vector<std::unique_ptr<memory_predictor>> make_memory_predictors(const memory_forecast_settings& s,
                                                                      const memory_estimate_fn& estimate = {});
// The predictor a rank runs unless told otherwise.
std::unique_ptr<memory_predictor> make_default_memory_predictor(const memory_forecast_settings& s);

class memory_forecast_core {
 public:
  explicit memory_forecast_core(const memory_forecast_settings& s,
                                std::unique_ptr<memory_predictor> predictor = nullptr);

  // Samples must come in step order; a repeated or older step is refused
  // (std::invalid_argument), so a replayed report cannot train the model twice. Only a
  // sample marked "resume" may go back: a run restarted from its checkpoint runs the steps
  // since then again, and their memory is new evidence.
  void observe(const memory_sample& s);
  // The next horizon_steps steps, from the newest sample's upcoming batches.
  memory_forecast forecast() const;

  size_t size() const { return window_.size(); }
  const std::deque<memory_sample>& window() const { return window_; }
  const memory_predictor& predictor() const { return *predictor_; }

 private:
  memory_forecast_settings s_;
  std::unique_ptr<memory_predictor> predictor_;
  std::deque<memory_sample> window_;
};

}  // namespace msomni::predict
