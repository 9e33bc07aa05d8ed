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
  std::vector<std::vector<std::pair<double, double>>> pairs(predictors.size());  // (forecast, actual)
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
      pairs[p].emplace_back(f.max_bytes, actual);
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
  for (size_t p = 0; p < predictors.size(); ++p)
    for (size_t q = 0; q < predictors.size(); ++q)
      if (q != p && scores[p].forecasts > 0)
        scores[p].under_rate_at_overhead_of.emplace_back(
            scores[q].name, under_rate_at_overhead(pairs[p], s.margin_bytes, scores[q].overhead_bytes));
  for (size_t p = 0; p < predictors.size(); ++p) scores[p].forecast_actual = std::move(pairs[p]);
  return scores;
}

double under_rate_at_overhead(const std::vector<std::pair<double, double>>& fa, double margin, double target) {
  if (fa.empty()) return 0.0;
  const double m = static_cast<double>(fa.size());
  const auto overhead = [&](double shift) {
    double o = 0;
    for (const auto& [f, a] : fa) o += std::max(0.0, f + margin + shift - a);
    return o / m;
  };
  const auto under = [&](double shift) {
    double u = 0;
    for (const auto& [f, a] : fa) u += a > f + margin + shift ? 1.0 : 0.0;
    return u / m;
  };
  // overhead(shift) grows with shift, from 0 (every reservation below its need) upwards.
  double lo = 0, hi = 0;
  for (const auto& [f, a] : fa) {
    lo = std::min(lo, a - f - margin);
    hi = std::max(hi, a - f - margin);
  }
  lo -= 1.0;
  hi += target + 1.0;
  if (overhead(hi) <= target) return under(hi);
  for (int i = 0; i < 200 && hi - lo > 1e-9 * std::max(1.0, std::abs(hi)); ++i) {
    const double mid = lo + (hi - lo) / 2;
    (overhead(mid) <= target ? lo : hi) = mid;
  }
  return under(lo);
}

}  // namespace msomni::predict
