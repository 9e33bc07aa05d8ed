// Ridge regression in closed form, and the memory predictor that fits the step's peak to
// its batch's features over the window. Columns are standardised (a constant column drops
// out) and the intercept is not penalised.
#pragma once

#include "memory_predictor.hpp"

#include <array>
#include <deque>
#include <span>
#include <vector>

namespace msomni::predict {

struct ridge_model {
  std::vector<double> mean, scale, coef;  // per column
  double intercept = 0;
  bool fitted = false;
  double predict(std::span<const double> x) const;
};

// rows: n x d, row-major. lambda scales the penalty per row (lambda * n on standardised
// columns), so the same lambda means the same shrinkage for any window length.
ridge_model ridge_fit(std::span<const double> rows, std::span<const double> y, size_t d, double lambda);

// Solves A x = b in place for a symmetric positive definite A (d x d, row-major) by
// Cholesky; false when A is not positive definite.
bool cholesky_solve(std::vector<double>& a, std::vector<double>& b, size_t d);

// peak_t ~ ridge(batch_feature_vector(batch_t)), refitted on the window after each step.
// A known upcoming batch gets the fit's value; an unknown one the largest fitted value
// among the window's batches.
class ridge_predictor final : public memory_predictor {
 public:
  ridge_predictor(size_t window, double lambda = 1e-4);
  std::string name() const override { return "ridge"; }
  void observe(const memory_sample& s) override;
  memory_forecast forecast(size_t horizon, std::span<const batch_features> upcoming) const override;

  const ridge_model& model() const { return model_; }
  double estimate(const batch_features& b) const;  // the fit's peak for b
  double unknown_batch_estimate() const;           // what an unknown batch gets

 private:
  size_t window_;
  double lambda_;
  std::deque<std::array<double, batch_feature_count>> features_;
  std::deque<double> peaks_;
  ridge_model model_;
  double unknown_ = 0;
};

}  // namespace msomni::predict
