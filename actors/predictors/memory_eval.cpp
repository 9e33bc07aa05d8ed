// Trace replay and the forecast metrics (definitions in memory_eval.hpp).
#include "memory_eval.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace msomni::predict {

std::vector<predictor_score> evaluate_memory_predictors(std::span<const memory_sample> trace,
                                                        std::vector<std::unique_ptr<memory_predictor>>& predictors,
                                                        const memory_eval_settings& s, const monotonic_ns_fn& now_ns) {
  if (s.horizon == 0) throw std::invalid_argument("evaluation horizon must be at least 1");
  std::vector<predictor_score> scores(predictors.size());
  std::vector<double> under(predictors.size(), 0.0), steps(predictors.size(), 0.0);
  for (size_t p = 0; p < predictors.size(); ++p) scores[p].name = predictors[p]->name();
  const size_t n = trace.size();
  for (size_t t = 0; t < n; ++t) {
    const bool scored = t + s.horizon < n;
    double actual = 0;
    if (scored)
      for (size_t k = 1; k <= s.horizon; ++k) actual = std::max(actual, static_cast<double>(trace[t + k].peak_bytes));
    for (size_t p = 0; p < predictors.size(); ++p) {
      auto& sc = scores[p];
      const int64_t t0 = now_ns ? now_ns() : 0;
      predictors[p]->observe(trace[t]);
      if (now_ns) {
        const double ns = static_cast<double>(now_ns() - t0);
        sc.observe_ns_mean += ns;
        sc.observe_ns_max = std::max(sc.observe_ns_max, ns);
      }
      if (!scored) continue;
      const auto f = predictors[p]->forecast(s.horizon, trace[t].upcoming);
      sc.forecasts += 1;
      sc.mae_bytes += std::abs(actual - f.max_bytes);
      if (actual > f.max_bytes + s.margin_bytes) under[p] += 1;
      sc.overhead_bytes += std::max(0.0, f.max_bytes + s.margin_bytes - actual);
      for (size_t k = 1; k <= s.horizon && k <= f.peak_bytes.size(); ++k) {
        sc.step_mae_bytes += std::abs(static_cast<double>(trace[t + k].peak_bytes) - f.peak_bytes[k - 1]);
        steps[p] += 1;
      }
    }
  }
  for (size_t p = 0; p < predictors.size(); ++p) {
    auto& sc = scores[p];
    if (n > 0) sc.observe_ns_mean /= static_cast<double>(n);
    if (sc.forecasts == 0) continue;
    const double m = static_cast<double>(sc.forecasts);
    sc.mae_bytes /= m;
    sc.under_rate = under[p] / m;
    sc.overhead_bytes /= m;
    if (steps[p] > 0) sc.step_mae_bytes /= steps[p];
  }
  return scores;
}

}  // namespace msomni::predict
