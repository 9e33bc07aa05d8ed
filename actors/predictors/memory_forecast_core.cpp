// The forecast core and the predictor line-up.
#include "memory_forecast_core.hpp"

#include "memory_ridge.hpp"

#include <stdexcept>
#include <string>

namespace msomni::predict {

namespace {

lstm_predictor_settings lstm_settings(const memory_forecast_settings& s) {
  lstm_predictor_settings l;
  l.window = s.sequence_length;
  l.horizon = s.horizon_steps;
  l.pca_dims = s.pca_dims;
  l.seed = s.seed;
  return l;
}

}  // namespace

std::vector<std::unique_ptr<memory_predictor>> make_memory_predictors(const memory_forecast_settings& s,
                                                                      const memory_estimate_fn& estimate) {
  std::vector<std::unique_ptr<memory_predictor>> out;
  out.push_back(std::make_unique<last_value_predictor>());
  out.push_back(std::make_unique<ewma_predictor>());
  out.push_back(std::make_unique<rolling_max_predictor>(s.sequence_length));
  if (estimate) out.push_back(std::make_unique<analytic_predictor>(estimate, s.sequence_length));
  out.push_back(std::make_unique<ridge_predictor>(s.sequence_length));
  auto peak = lstm_settings(s);
  peak.target = lstm_target::peak;
  out.push_back(std::make_unique<lstm_attention_predictor>(peak));
  out.push_back(std::make_unique<lstm_attention_predictor>(lstm_settings(s)));
  return out;
}

std::unique_ptr<memory_predictor> make_default_memory_predictor(const memory_forecast_settings& s) {
  return std::make_unique<lstm_attention_predictor>(lstm_settings(s));
}

memory_forecast_core::memory_forecast_core(const memory_forecast_settings& s,
                                           std::unique_ptr<memory_predictor> predictor)
    : s_(s), predictor_(predictor ? std::move(predictor) : make_default_memory_predictor(s)) {
  if (s.sequence_length < 2) throw std::invalid_argument("memory forecast: sequence_length must be at least 2");
  if (s.horizon_steps < 1) throw std::invalid_argument("memory forecast: horizon_steps must be at least 1");
}

void memory_forecast_core::observe(const memory_sample& s) {
  if (!window_.empty() && s.step <= window_.back().step && s.event != "resume")
    throw std::invalid_argument("memory forecast: step " + std::to_string(s.step) + " after step " +
                                std::to_string(window_.back().step));
  predictor_->observe(s);
  window_.push_back(s);
  if (window_.size() > s_.sequence_length) window_.pop_front();
}

memory_forecast memory_forecast_core::forecast() const {
  static const std::vector<batch_features> none;
  const auto& upcoming = window_.empty() ? none : window_.back().upcoming;
  return predictor_->forecast(s_.horizon_steps, upcoming);
}

}  // namespace msomni::predict
