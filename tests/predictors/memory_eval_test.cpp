// The evaluation's metrics on a trace small enough to score by hand, and the line-up on a
// saw tooth: the feature-aware predictors must beat the ones that only look back.
#include "memory_baselines.hpp"
#include "memory_eval.hpp"
#include "memory_forecast_core.hpp"
#include "sawtooth_trace.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace msomni::predict;

TEST_CASE("the metrics of a hand-scored replay") {
  std::vector<memory_sample> trace;
  for (int64_t t = 0; t < 5; ++t) {
    memory_sample s;
    s.step = t;
    s.peak_bytes = 10 * (t + 1);  // 10 20 30 40 50
    s.world_size = 1;
    trace.push_back(s);
  }
  std::vector<std::unique_ptr<memory_predictor>> ps;
  ps.push_back(std::make_unique<last_value_predictor>());
  memory_eval_settings s;
  s.horizon = 2;
  s.margin_bytes = 25;
  int64_t clock = 0;
  const auto scores = evaluate_memory_predictors(trace, ps, s, [&] { return clock += 1000; });
  REQUIRE(scores.size() == 1);
  const auto& sc = scores[0];
  CHECK(sc.name == "last_value");
  // t = 0, 1, 2: actual 30, 40, 50 against 10, 20, 30: errors 20 each; 20 < 25 never short;
  // reserved 10 + 25 - 30 = 5 over each time. Per step: |20-10| + |30-10| ... = (10+20)*3/6.
  CHECK(sc.forecasts == 3);
  CHECK(sc.mae_bytes == doctest::Approx(20));
  CHECK(sc.under_rate == 0);
  CHECK(sc.overhead_bytes == doctest::Approx(5));
  CHECK(sc.step_mae_bytes == doctest::Approx(15));
  CHECK(sc.observe_ns_mean == doctest::Approx(1000));
  s.margin_bytes = 15;
  std::vector<std::unique_ptr<memory_predictor>> again;
  again.push_back(std::make_unique<last_value_predictor>());
  const auto tight = evaluate_memory_predictors(trace, again, s);
  CHECK(tight[0].under_rate == 1);
  CHECK(tight[0].overhead_bytes == 0);
  CHECK(tight[0].observe_ns_mean == 0);
}

TEST_CASE("on a saw tooth driven by batch features the feature-aware predictors beat the look-back ones") {
  memory_forecast_settings fs;
  fs.sequence_length = 200;
  fs.horizon_steps = 10;
  auto predictors = make_memory_predictors(fs, [](int64_t mb, int64_t s) {
    return static_cast<double>((int64_t{6} << 30) + mb * s * (int64_t{1} << 20) + mb * s * s * 2048);
  });
  const auto trace = msomni::testing::sawtooth_trace(400, 10);
  memory_eval_settings es;
  es.horizon = 10;
  es.margin_bytes = 0.5 * (1 << 30);
  const auto scores = evaluate_memory_predictors(trace, predictors, es);
  std::map<std::string, predictor_score> by;
  for (const auto& s : scores) {
    MESSAGE(s.name << ": mae " << s.mae_bytes / (1 << 30) << " GB, under " << s.under_rate << ", overhead "
                   << s.overhead_bytes / (1 << 30) << " GB, step mae " << s.step_mae_bytes / (1 << 30) << " GB");
    by[s.name] = s;
  }
  REQUIRE(by.size() == 7);
  CHECK(by["ridge"].mae_bytes < by["last_value"].mae_bytes);
  CHECK(by["ridge"].mae_bytes < by["ewma"].mae_bytes);
  CHECK(by["lstm_attention"].mae_bytes < by["last_value"].mae_bytes);
  CHECK(by["lstm_attention"].step_mae_bytes < by["rolling_max"].step_mae_bytes);
  CHECK(by["analytic"].step_mae_bytes < by["rolling_max"].step_mae_bytes);
  // With every batch of the horizon known the ridge is short only at the first step, when it
  // has seen one sample (1 of 390 scored).
  CHECK(by["ridge"].under_rate < 0.01);
}

TEST_CASE("the lstm's residual learns memory history the batch features do not show") {
  // A slow growth reset every 300 steps (a cache filling and being emptied) on top of the
  // batch-driven saw tooth: the ridge sees only batch features and lags; the lstm reads the
  // rank's own bytes over its window.
  auto trace = msomni::testing::sawtooth_trace(800, 10);
  for (auto& s : trace) {
    const int64_t growth = (s.step % 300) * (int64_t{8} << 20);
    s.peak_bytes += growth;
    s.in_use_bytes += growth;
  }
  std::vector<std::unique_ptr<memory_predictor>> ps;
  ps.push_back(std::make_unique<ridge_predictor>(200));
  ps.push_back(make_default_memory_predictor({}));
  memory_eval_settings es;
  const auto scores = evaluate_memory_predictors(trace, ps, es);
  MESSAGE("ridge mae " << scores[0].mae_bytes / (1 << 30) << " GB, " << scores[1].name << " mae "
                       << scores[1].mae_bytes / (1 << 30) << " GB");
  CHECK(scores[1].name == "lstm_attention");
  CHECK(scores[1].mae_bytes < 0.5 * scores[0].mae_bytes);
}

TEST_CASE("with no batch known ahead the lstm's max output keeps its reservation close and rarely short") {
  const auto trace = msomni::testing::sawtooth_trace(600, 0);
  std::vector<std::unique_ptr<memory_predictor>> ps;
  ps.push_back(std::make_unique<ridge_predictor>(200));
  ps.push_back(make_default_memory_predictor({}));
  memory_eval_settings es;
  const auto scores = evaluate_memory_predictors(trace, ps, es);
  MESSAGE("ridge mae " << scores[0].mae_bytes / (1 << 30) << " GB under " << scores[0].under_rate << "; lstm mae "
                       << scores[1].mae_bytes / (1 << 30) << " GB under " << scores[1].under_rate);
  CHECK(scores[1].mae_bytes < 0.25 * (1 << 30));
  CHECK(scores[1].under_rate < 0.01);
}

TEST_CASE("under rate at another's overhead: the margin moves until the overheads match") {
  // Forecasts 10 under, 0 and 10 over their actuals; margin 5.
  const std::vector<std::pair<double, double>> fa{{90, 100}, {100, 100}, {110, 100}};
  // Overhead 7 allows a margin of 5.5: (0 + 5.5 + 15.5) / 3; short on 1 of 3.
  CHECK(msomni::predict::under_rate_at_overhead(fa, 5, 7.0) == doctest::Approx(1.0 / 3));
  // Allowed more overhead (an extra 5 on every step): the margin reaches 10, nobody is short.
  CHECK(msomni::predict::under_rate_at_overhead(fa, 5, 35.0 / 3) == 0.0);
  // Allowed less: the margin drops below 0 and the exact forecast is short too.
  CHECK(msomni::predict::under_rate_at_overhead(fa, 5, 3.0) == doctest::Approx(2.0 / 3));
  CHECK(msomni::predict::under_rate_at_overhead({}, 5, 1.0) == 0.0);
}
