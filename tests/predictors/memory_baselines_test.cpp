// The baseline memory predictors and the forecast core's window.
#include "memory_baselines.hpp"
#include "memory_forecast_core.hpp"
#include "sawtooth_trace.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace msomni::predict;

namespace {

memory_sample with_peak(int64_t step, int64_t peak) {
  memory_sample s;
  s.step = step;
  s.peak_bytes = peak;
  s.in_use_bytes = peak / 2;
  s.world_size = 1;
  return s;
}

}  // namespace

TEST_CASE("last value, ewma and rolling max forecast what they say") {
  last_value_predictor last;
  ewma_predictor ewma(0.5);
  rolling_max_predictor rmax(3);
  CHECK(last.forecast(2, {}).max_bytes == 0);
  const int64_t peaks[] = {10, 40, 20, 30, 5};
  for (int64_t i = 0; i < 5; ++i) {
    last.observe(with_peak(i, peaks[i]));
    ewma.observe(with_peak(i, peaks[i]));
    rmax.observe(with_peak(i, peaks[i]));
  }
  const auto l = last.forecast(4, {});
  REQUIRE(l.peak_bytes.size() == 4);
  CHECK(l.peak_bytes[3] == 5);
  CHECK(l.max_bytes == 5);
  // 10 -> 25 -> 22.5 -> 26.25 -> 15.625
  CHECK(ewma.forecast(1, {}).max_bytes == doctest::Approx(15.625));
  // The window of 3 holds 20, 30, 5: the 40 has left it.
  CHECK(rmax.forecast(2, {}).max_bytes == 30);
}

TEST_CASE("the analytic predictor estimates known batches and the window's worst for unknown ones") {
  analytic_predictor p([](int64_t mb, int64_t s) { return 100.0 + static_cast<double>(mb * s); }, 2);
  memory_sample a = with_peak(0, 1), b = with_peak(1, 1), c = with_peak(2, 1);
  a.batch.micro_batch = 1, a.batch.seq_len = 900;  // leaves the window of 2
  b.batch.micro_batch = 2, b.batch.seq_len = 10;
  c.batch.micro_batch = 1, c.batch.seq_len = 50;
  p.observe(a), p.observe(b), p.observe(c);
  batch_features next;
  next.micro_batch = 3, next.seq_len = 7;
  const std::vector<batch_features> upcoming{next};
  const auto f = p.forecast(3, upcoming);
  REQUIRE(f.peak_bytes.size() == 3);
  CHECK(f.peak_bytes[0] == 121);
  CHECK(f.peak_bytes[1] == 150);
  CHECK(f.peak_bytes[2] == 150);
  CHECK(f.max_bytes == 150);
}

TEST_CASE("the token estimate fit recovers fixed bytes and bytes per token") {
  auto trace = msomni::testing::sawtooth_trace(12);
  for (auto& s : trace) s.peak_bytes = 1000 + 3 * s.batch.micro_batch * s.batch.seq_len;
  const auto e = fit_token_estimate(trace);
  CHECK(e.base_bytes == doctest::Approx(1000).epsilon(1e-9));
  CHECK(e.bytes_per_token == doctest::Approx(3).epsilon(1e-9));
  // One batch shape only: the level, no slope.
  const auto flat = fit_token_estimate(std::span(trace).first(1));
  CHECK(flat.bytes_per_token == 0);
  CHECK(flat.base_bytes == static_cast<double>(trace[0].peak_bytes));
}

TEST_CASE("the forecast core keeps a bounded window, refuses replays and forecasts the horizon") {
  memory_forecast_settings s;
  s.sequence_length = 30;
  s.horizon_steps = 5;
  memory_forecast_core core(s);
  const auto trace = msomni::testing::sawtooth_trace(80);
  for (const auto& x : trace) core.observe(x);
  CHECK(core.size() == 30);
  CHECK(core.window().front().step == 50);
  CHECK_THROWS_AS(core.observe(trace.back()), std::invalid_argument);
  auto resumed = trace[70];
  resumed.event = "resume";
  core.observe(resumed);
  CHECK(core.window().back().step == 70);
  CHECK(core.size() == 30);
  const auto f = core.forecast();
  REQUIRE(f.peak_bytes.size() == 5);
  double m = 0;
  for (double v : f.peak_bytes) {
    CHECK(v > 0);
    m = std::max(m, v);
  }
  CHECK(f.max_bytes >= m);
  CHECK(core.predictor().name() == make_default_memory_predictor(s)->name());
}
