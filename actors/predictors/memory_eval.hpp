// Replays a rank's memory trace through predictors and scores their forecasts of the next
// `horizon` steps' peak:
//   actual_t   = max(peak_{t+1} .. peak_{t+horizon})   (only steps with a full horizon after them)
//   forecast_t = the predictor's max over the horizon after observing step t
//   mae        = mean |actual_t - forecast_t|
//   under_rate = share of steps with actual_t > forecast_t + margin (the reservation was short)
//   overhead   = mean of max(0, forecast_t + margin - actual_t) (bytes reserved and not used)
//   step_mae   = mean over t and k of |peak_{t+k} - forecast_t[k]| (the per-step shape)
//   under_rate_at_overhead_of[q] = this predictor's under_rate when its margin is moved (up
//                or down) as far as it may go while its overhead stays at or below q's: the
//                comparison of two predictors' shortfalls at an equal reservation
// Pure: the clock that times observe() is a parameter.
#pragma once

#include "memory_predictor.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace msomni::predict {

struct memory_eval_settings {
  size_t horizon = 10;
  double margin_bytes = 3.5 * 1024.0 * 1024.0 * 1024.0;
};

struct predictor_score {
  std::string name;
  size_t forecasts = 0;
  double mae_bytes = 0;
  double under_rate = 0;
  double overhead_bytes = 0;
  double step_mae_bytes = 0;
  double observe_ns_mean = 0;  // per observe() call, by the given clock (0 without one)
  double observe_ns_max = 0;
  std::vector<std::pair<std::string, double>> under_rate_at_overhead_of;  // (other predictor, rate)
  // (forecast of the horizon's peak, the actual peak) of every scored step, in order: for
  // comparisons at another margin, or across traces.
  std::vector<std::pair<double, double>> forecast_actual;
};

// The under rate of (forecast, actual) pairs whose margin is moved so that their overhead is
// the largest one at or below `overhead_bytes` (bisection on the margin's shift).
double under_rate_at_overhead(const std::vector<std::pair<double, double>>& forecast_actual, double margin_bytes,
                              double overhead_bytes);

using monotonic_ns_fn = std::function<int64_t()>;

std::vector<predictor_score> evaluate_memory_predictors(std::span<const memory_sample> trace,
                                                        std::vector<std::unique_ptr<memory_predictor>>& predictors,
                                                        const memory_eval_settings& s,
                                                        const monotonic_ns_fn& now_ns = {});

}  // namespace msomni::predict
