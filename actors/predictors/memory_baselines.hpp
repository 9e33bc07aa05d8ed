// The simple memory predictors the learned one must beat: the last peak, an exponentially
// weighted mean of peaks, the largest peak in the window, and the model's analytic
// estimate of the next batches. Each keeps at most `window` samples.
#pragma once

#include "memory_predictor.hpp"

#include <deque>
#include <functional>
#include <span>

namespace msomni::predict {

// Every step ahead gets the last observed peak.
class last_value_predictor final : public memory_predictor {
 public:
  std::string name() const override { return "last_value"; }
  void observe(const memory_sample& s) override { last_ = static_cast<double>(s.peak_bytes); }
  memory_forecast forecast(size_t horizon, std::span<const batch_features> upcoming) const override;

 private:
  double last_ = 0;
};

// Every step ahead gets mean_{t} = alpha * peak_t + (1 - alpha) * mean_{t-1}.
class ewma_predictor final : public memory_predictor {
 public:
  explicit ewma_predictor(double alpha = 0.2);
  std::string name() const override { return "ewma"; }
  void observe(const memory_sample& s) override;
  memory_forecast forecast(size_t horizon, std::span<const batch_features> upcoming) const override;

 private:
  double alpha_;
  double mean_ = 0;
  bool seen_ = false;
};

// Every step ahead gets the largest peak of the last `window` steps.
class rolling_max_predictor final : public memory_predictor {
 public:
  explicit rolling_max_predictor(size_t window);
  std::string name() const override { return "rolling_max"; }
  void observe(const memory_sample& s) override;
  memory_forecast forecast(size_t horizon, std::span<const batch_features> upcoming) const override;

 private:
  size_t window_;
  std::deque<int64_t> peaks_;
};

// Bytes a batch of (micro_batch, seq_len) needs by the model's own accounting
// (model::model::estimate_memory(...).total()).
using memory_estimate_fn = std::function<double(int64_t micro_batch, int64_t seq_len)>;

// A known upcoming batch gets the estimate of its (micro_batch, seq_len); a step whose batch
// is not known yet gets the largest estimate among the window's batches.
class analytic_predictor final : public memory_predictor {
 public:
  analytic_predictor(memory_estimate_fn estimate, size_t window);
  std::string name() const override { return "analytic"; }
  void observe(const memory_sample& s) override;
  memory_forecast forecast(size_t horizon, std::span<const batch_features> upcoming) const override;

 private:
  memory_estimate_fn estimate_;
  size_t window_;
  std::deque<double> estimates_;  // of the window's batches
};

// An analytic estimate of the form base + per_token * micro_batch * seq_len, fitted by
// least squares to the peaks of a trace's first steps: what a caller without the model at
// hand (the evaluation tool) uses in place of estimate_memory.
struct token_estimate {
  double base_bytes = 0;
  double bytes_per_token = 0;
  double operator()(int64_t micro_batch, int64_t seq_len) const {
    return base_bytes + bytes_per_token * static_cast<double>(micro_batch) * static_cast<double>(seq_len);
  }
};
token_estimate fit_token_estimate(std::span<const memory_sample> samples);

}  // namespace msomni::predict
