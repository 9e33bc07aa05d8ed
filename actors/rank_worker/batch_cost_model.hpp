// How long a micro-batch's forward and backward take on this rank, predicted from what the
// batch holds, and calibrated online from the rank's own measured times: a least-squares fit,
// exponentially weighted (recent batches count more), of
//   ms = a x positions + b x positions^2 + c
// where positions sums each sample's patches and non-padding text tokens and positions^2 sums
// their squares (attention). Its error (|predicted - measured| / measured, averaged
// exponentially) is what the rank reports. The step balancer places samples by the same form
// with the model's analytic weights (data/sample_cost.hpp), which every rank shares without a
// message; this fit tells how well that form predicts the real times.
// Pure: times come in as numbers.
#pragma once

#include "model/micro_batch.hpp"

#include <array>
#include <cstdint>
#include <optional>

namespace msomni::rank_worker {

struct cost_features {
  double positions = 0;     // sum over samples of patches + text tokens
  double positions_sq = 0;  // sum over samples of (patches + text tokens)^2
};

// Text tokens count up to and including EOS (text_tokens.hpp: BOS bytes EOS PAD...).
cost_features cost_features_of(const model::micro_batch& b);

class batch_cost_model {
 public:
  explicit batch_cost_model(double decay = 0.98, double ridge = 1e-6) : decay_(decay), ridge_(ridge) {}

  // The predicted ms of a micro-batch (nullopt until min_batches were measured).
  std::optional<double> predict(const cost_features& f) const;
  // One measured micro-batch: scores the prediction made before it (the error), then learns.
  void observe(const cost_features& f, double measured_ms);

  // Mean relative error of the predictions scored so far (exponentially weighted); nullopt
  // before the first scored one.
  std::optional<double> error() const { return scored_ ? std::optional<double>(error_) : std::nullopt; }
  uint64_t batches() const { return batches_; }
  static constexpr uint64_t min_batches = 8;

 private:
  std::optional<std::array<double, 3>> solve() const;

  double decay_, ridge_;
  std::array<std::array<double, 3>, 3> xtx_{};  // weighted sums of x x^T, x = (positions, positions^2, 1)
  std::array<double, 3> xty_{};
  uint64_t batches_ = 0;
  bool scored_ = false;
  double error_ = 0;
};

}  // namespace msomni::rank_worker
