// Closed-form ridge regression and the feature-based memory predictor.
#include "memory_ridge.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace msomni::predict {

double ridge_model::predict(std::span<const double> x) const {
  double y = intercept;
  for (size_t j = 0; j < coef.size() && j < x.size(); ++j) y += coef[j] * (x[j] - mean[j]) / scale[j];
  return y;
}

bool cholesky_solve(std::vector<double>& a, std::vector<double>& b, size_t d) {
  for (size_t j = 0; j < d; ++j) {
    double diag = a[j * d + j];
    for (size_t k = 0; k < j; ++k) diag -= a[j * d + k] * a[j * d + k];
    if (!(diag > 0)) return false;
    const double l = std::sqrt(diag);
    a[j * d + j] = l;
    for (size_t i = j + 1; i < d; ++i) {
      double v = a[i * d + j];
      for (size_t k = 0; k < j; ++k) v -= a[i * d + k] * a[j * d + k];
      a[i * d + j] = v / l;
    }
  }
  for (size_t i = 0; i < d; ++i) {  // L z = b
    double v = b[i];
    for (size_t k = 0; k < i; ++k) v -= a[i * d + k] * b[k];
    b[i] = v / a[i * d + i];
  }
  for (size_t i = d; i-- > 0;) {  // L^T x = z
    double v = b[i];
    for (size_t k = i + 1; k < d; ++k) v -= a[k * d + i] * b[k];
    b[i] = v / a[i * d + i];
  }
  return true;
}

ridge_model ridge_fit(std::span<const double> rows, std::span<const double> y, size_t d, double lambda) {
  const size_t n = y.size();
  if (rows.size() != n * d) throw std::invalid_argument("ridge_fit: rows do not match y");
  ridge_model m;
  m.mean.assign(d, 0.0);
  m.scale.assign(d, 1.0);
  m.coef.assign(d, 0.0);
  if (n == 0) return m;
  double y_mean = 0;
  for (size_t i = 0; i < n; ++i) {
    y_mean += y[i];
    for (size_t j = 0; j < d; ++j) m.mean[j] += rows[i * d + j];
  }
  y_mean /= static_cast<double>(n);
  for (auto& v : m.mean) v /= static_cast<double>(n);
  for (size_t j = 0; j < d; ++j) {
    double var = 0;
    for (size_t i = 0; i < n; ++i) var += (rows[i * d + j] - m.mean[j]) * (rows[i * d + j] - m.mean[j]);
    const double sd = std::sqrt(var / static_cast<double>(n));
    m.scale[j] = sd > 1e-12 * std::max(1.0, std::abs(m.mean[j])) ? sd : 0.0;
  }
  // Normal equations on the standardised columns that vary; a constant column keeps 0.
  std::vector<size_t> live;
  for (size_t j = 0; j < d; ++j)
    if (m.scale[j] > 0) live.push_back(j);
  for (auto& s : m.scale)
    if (s == 0) s = 1.0;
  m.intercept = y_mean;
  m.fitted = true;
  const size_t k = live.size();
  if (k == 0) return m;
  std::vector<double> a(k * k, 0.0), b(k, 0.0), z(k);
  for (size_t i = 0; i < n; ++i) {
    for (size_t p = 0; p < k; ++p) z[p] = (rows[i * d + live[p]] - m.mean[live[p]]) / m.scale[live[p]];
    const double r = y[i] - y_mean;
    for (size_t p = 0; p < k; ++p) {
      b[p] += z[p] * r;
      for (size_t q = 0; q <= p; ++q) a[p * k + q] += z[p] * z[q];
    }
  }
  const double penalty = std::max(lambda, 1e-12) * static_cast<double>(n);
  for (size_t p = 0; p < k; ++p) {
    for (size_t q = 0; q < p; ++q) a[q * k + p] = a[p * k + q];
    a[p * k + p] += penalty;
  }
  if (!cholesky_solve(a, b, k)) return m;  // cannot happen with a positive penalty; the mean stays
  for (size_t p = 0; p < k; ++p) m.coef[live[p]] = b[p];
  return m;
}

ridge_predictor::ridge_predictor(size_t window, double lambda) : window_(window), lambda_(lambda) {
  if (window == 0) throw std::invalid_argument("ridge window must be at least 1");
  if (!(lambda >= 0)) throw std::invalid_argument("ridge lambda must be >= 0");
}

void ridge_predictor::observe(const memory_sample& s) {
  features_.push_back(batch_feature_vector(s.batch));
  peaks_.push_back(static_cast<double>(s.peak_bytes));
  if (peaks_.size() > window_) {
    features_.pop_front();
    peaks_.pop_front();
  }
  const size_t n = peaks_.size(), d = batch_feature_count;
  std::vector<double> rows(n * d), y(peaks_.begin(), peaks_.end());
  for (size_t i = 0; i < n; ++i) std::copy(features_[i].begin(), features_[i].end(), rows.begin() + i * d);
  model_ = ridge_fit(rows, y, d, lambda_);
  unknown_ = 0;
  for (const auto& f : features_) unknown_ = std::max(unknown_, model_.predict(f));
}

double ridge_predictor::estimate(const batch_features& b) const {
  if (!model_.fitted) return 0.0;
  const auto x = batch_feature_vector(b);
  return model_.predict(x);
}

double ridge_predictor::unknown_batch_estimate() const { return unknown_; }

memory_forecast ridge_predictor::forecast(size_t horizon, std::span<const batch_features> upcoming) const {
  std::vector<double> out(horizon, unknown_);
  for (size_t k = 0; k < horizon && k < upcoming.size(); ++k) out[k] = estimate(upcoming[k]);
  return finish_forecast(std::move(out));
}

}  // namespace msomni::predict

