// batch_cost_model (see batch_cost_model.hpp).
#include "batch_cost_model.hpp"

#include "model/text_tokens.hpp"

#include <cmath>

namespace msomni::rank_worker {

cost_features cost_features_of(const model::micro_batch& b) {
  cost_features f;
  for (int64_t i = 0; i < b.batch; ++i) {
    double n = i < int64_t(b.patch_counts.size()) ? double(b.patch_counts[size_t(i)]) : 0.0;
    for (int64_t t = 0; t < b.text_len; ++t) {
      const size_t at = size_t(i * b.text_len + t);
      if (at >= b.tokens.size() || b.tokens[at] == model::token_pad) break;
      n += 1;
    }
    f.positions += n;
    f.positions_sq += n * n;
  }
  return f;
}

std::optional<std::array<double, 3>> batch_cost_model::solve() const {
  // Cholesky of (X^T W X + ridge x trace x I), the features scaled by the diagonal first so
  // positions^2 (large) and the constant (1) are solved with one precision.
  std::array<double, 3> scale{};
  for (int i = 0; i < 3; ++i) scale[i] = xtx_[i][i] > 0 ? 1.0 / std::sqrt(xtx_[i][i]) : 1.0;
  double a[3][3], y[3];
  for (int i = 0; i < 3; ++i) {
    y[i] = xty_[i] * scale[i];
    for (int j = 0; j < 3; ++j) a[i][j] = xtx_[i][j] * scale[i] * scale[j] + (i == j ? ridge_ : 0.0);
  }
  double l[3][3] = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = a[i][j];
      for (int k = 0; k < j; ++k) s -= l[i][k] * l[j][k];
      if (i == j) {
        if (s <= 0) return std::nullopt;
        l[i][i] = std::sqrt(s);
      } else {
        l[i][j] = s / l[j][j];
      }
    }
  double z[3], w[3];
  for (int i = 0; i < 3; ++i) {
    double s = y[i];
    for (int k = 0; k < i; ++k) s -= l[i][k] * z[k];
    z[i] = s / l[i][i];
  }
  for (int i = 2; i >= 0; --i) {
    double s = z[i];
    for (int k = i + 1; k < 3; ++k) s -= l[k][i] * w[k];
    w[i] = s / l[i][i];
  }
  return std::array<double, 3>{w[0] * scale[0], w[1] * scale[1], w[2] * scale[2]};
}

std::optional<double> batch_cost_model::predict(const cost_features& f) const {
  if (batches_ < min_batches) return std::nullopt;
  const auto w = solve();
  if (!w) return std::nullopt;
  return std::max(0.0, (*w)[0] * f.positions + (*w)[1] * f.positions_sq + (*w)[2]);
}

void batch_cost_model::observe(const cost_features& f, double measured_ms) {
  if (!(measured_ms > 0) || !std::isfinite(measured_ms)) return;
  if (const auto p = predict(f)) {
    const double e = std::abs(*p - measured_ms) / measured_ms;
    error_ = scored_ ? 0.9 * error_ + 0.1 * e : e;
    scored_ = true;
  }
  const double x[3] = {f.positions, f.positions_sq, 1.0};
  for (int i = 0; i < 3; ++i) {
    xty_[i] = decay_ * xty_[i] + x[i] * measured_ms;
    for (int j = 0; j < 3; ++j) xtx_[i][j] = decay_ * xtx_[i][j] + x[i] * x[j];
  }
  ++batches_;
}

}  // namespace msomni::rank_worker
