// The baseline memory predictors and the token-cost fit of the analytic estimate.
#include "memory_baselines.hpp"

#include <algorithm>
#include <stdexcept>

namespace msomni::predict {

memory_forecast finish_forecast(std::vector<double> peak_bytes) {
  memory_forecast f;
  f.max_bytes = peak_bytes.empty() ? 0.0 : *std::max_element(peak_bytes.begin(), peak_bytes.end());
  f.peak_bytes = std::move(peak_bytes);
  return f;
}

memory_forecast last_value_predictor::forecast(size_t horizon, std::span<const batch_features>) const {
  return finish_forecast(std::vector<double>(horizon, last_));
}

ewma_predictor::ewma_predictor(double alpha) : alpha_(alpha) {
  if (!(alpha > 0 && alpha <= 1)) throw std::invalid_argument("ewma alpha must be in (0, 1]");
}

void ewma_predictor::observe(const memory_sample& s) {
  const double x = static_cast<double>(s.peak_bytes);
  mean_ = seen_ ? alpha_ * x + (1 - alpha_) * mean_ : x;
  seen_ = true;
}

memory_forecast ewma_predictor::forecast(size_t horizon, std::span<const batch_features>) const {
  return finish_forecast(std::vector<double>(horizon, mean_));
}

rolling_max_predictor::rolling_max_predictor(size_t window) : window_(window) {
  if (window == 0) throw std::invalid_argument("rolling max window must be at least 1");
}

void rolling_max_predictor::observe(const memory_sample& s) {
  peaks_.push_back(s.peak_bytes);
  if (peaks_.size() > window_) peaks_.pop_front();
}

memory_forecast rolling_max_predictor::forecast(size_t horizon, std::span<const batch_features>) const {
  const double m = peaks_.empty() ? 0.0 : static_cast<double>(*std::max_element(peaks_.begin(), peaks_.end()));
  return finish_forecast(std::vector<double>(horizon, m));
}

analytic_predictor::analytic_predictor(memory_estimate_fn estimate, size_t window)
    : estimate_(std::move(estimate)), window_(window) {
  if (!estimate_) throw std::invalid_argument("analytic predictor needs an estimate");
  if (window == 0) throw std::invalid_argument("analytic predictor window must be at least 1");
}

void analytic_predictor::observe(const memory_sample& s) {
  estimates_.push_back(estimate_(s.batch.micro_batch, s.batch.seq_len));
  if (estimates_.size() > window_) estimates_.pop_front();
}

memory_forecast analytic_predictor::forecast(size_t horizon, std::span<const batch_features> upcoming) const {
  const double unknown =
      estimates_.empty() ? 0.0 : *std::max_element(estimates_.begin(), estimates_.end());
  std::vector<double> out(horizon, unknown);
  for (size_t k = 0; k < horizon && k < upcoming.size(); ++k)
    out[k] = estimate_(upcoming[k].micro_batch, upcoming[k].seq_len);
  return finish_forecast(std::move(out));
}

token_estimate fit_token_estimate(std::span<const memory_sample> samples) {
  token_estimate e;
  if (samples.empty()) return e;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& s : samples) {
    const double x = static_cast<double>(s.batch.micro_batch) * static_cast<double>(s.batch.seq_len);
    const double y = static_cast<double>(s.peak_bytes);
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double var = sxx - sx * sx / n;
  // One token count among the steps: no slope to fit, so the estimate is that level.
  if (var <= 1e-9 * std::max(1.0, sxx)) {
    e.base_bytes = sy / n;
    return e;
  }
  e.bytes_per_token = (sxy - sx * sy / n) / var;
  e.base_bytes = (sy - e.bytes_per_token * sx) / n;
  return e;
}

}  // namespace msomni::predict
