// The job's memory watermark core: advice only when it is news (first forecast, a reservation
// that moved, fitting <-> not fitting), restarts and resizes passed on, repeats never trained twice.
#include "sawtooth_trace.hpp"
#include "watermark_core.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace msomni::predict;

namespace {

memory_sample step_sample(int64_t step, int64_t peak, int64_t world = 2) {
  memory_sample s;
  s.step = step;
  s.t_ms = static_cast<double>(step) * 100;
  s.peak_bytes = peak;
  s.in_use_bytes = peak / 2;
  s.batch = msomni::testing::sawtooth_batch(step);
  s.world_size = world;
  return s;
}

watermark_settings settings(double device_gb, double margin_gb) {
  watermark_settings w;
  w.forecast.sequence_length = 20;
  w.forecast.horizon_steps = 4;
  w.forecast.pca_dims = 4;
  w.margin_bytes = margin_gb * 1e9;
  w.device_bytes = device_gb * 1e9;
  return w;
}

}  // namespace

TEST_CASE("the first forecast is advice and a steady rank then sends nothing") {
  watermark_core c(settings(80, 3.5));
  const auto first = c.on_sample("rank-0", 0, step_sample(1, 10'000'000'000));
  REQUIRE(first);
  CHECK(first->rank_name == "rank-0");
  CHECK(first->step == 1);
  CHECK(first->advice.action == memory_action::reserve);
  CHECK(first->advice.fits);
  CHECK(first->advice.reserve_bytes == doctest::Approx(first->forecast.max_bytes + 3.5e9));
  CHECK(first->reason.find("reserve ") != std::string::npos);
  for (int64_t step = 2; step <= 30; ++step) CHECK_FALSE(c.on_sample("rank-0", 0, step_sample(step, 10'000'000'000)));
  CHECK(c.counts().samples == 30);
  CHECK(c.counts().advice_sent == 1);
  CHECK(c.forecasts().count("rank-0") == 1);
}

TEST_CASE("a forecast beyond the device is news, and so is fitting again") {
  watermark_core c(settings(12, 1));
  REQUIRE(c.on_sample("rank-1", 1, step_sample(1, 8'000'000'000)));
  std::optional<watermark_advice> over;
  for (int64_t step = 2; step <= 40 && !over; ++step) over = c.on_sample("rank-1", 1, step_sample(step, 14'000'000'000));
  REQUIRE(over);
  CHECK_FALSE(over->advice.fits);
  CHECK(over->reason.find("do not fit") != std::string::npos);
  CHECK(c.counts().overflow_forecasts >= 1);
}

TEST_CASE("a step that goes back is a restart, a repeat without one is never trained twice") {
  watermark_core c(settings(80, 3.5));
  for (int64_t step = 1; step <= 10; ++step) c.on_sample("rank-0", 0, step_sample(step, 9'000'000'000));
  const auto before = c.counts().samples;
  // A run restarted from the checkpoint at step 5: its samples repeat 6.. as "resume".
  c.on_sample("rank-0", 0, step_sample(6, 9'000'000'000));
  CHECK(c.counts().samples == before + 1);
  // A world-size change is passed on as a resize and keeps going forward.
  c.on_sample("rank-0", 0, step_sample(7, 9'000'000'000, 4));
  CHECK(c.counts().samples == before + 2);
  c.forget("rank-0");
  CHECK(c.forecasts().count("rank-0") == 0);
}

TEST_CASE("settings that cannot advise are refused") {
  CHECK_THROWS_AS(watermark_core(settings(0, 1)), std::invalid_argument);
  CHECK_THROWS_AS(watermark_core(settings(10, -1)), std::invalid_argument);
}

TEST_CASE("a coming step forecast over the budget is a fit request, once, for a batch the rank holds") {
  // Peaks follow the batch; the video batches (about 18 GB) pass a 13 GB device with a 1 GB
  // margin, the others (at most about 10.7 GB) do not.
  watermark_core c(settings(13, 1));
  std::vector<fit_request> fits;
  for (int64_t step = 1; step <= 60; ++step) {
    memory_sample s;
    s.step = step;
    s.t_ms = static_cast<double>(step) * 100;
    s.batch = msomni::testing::sawtooth_batch(step);
    s.peak_bytes = msomni::testing::sawtooth_peak_bytes(s.batch, step);
    s.in_use_bytes = 6'000'000'000;
    s.world_size = 2;
    for (int64_t k = 1; k <= 3; ++k) s.upcoming.push_back(msomni::testing::sawtooth_batch(step + k));
    c.on_sample("rank-1", 1, s);
    for (auto& f : c.take_fits()) fits.push_back(std::move(f));
    CHECK(c.take_fits().empty());  // taken once
  }
  REQUIRE_FALSE(fits.empty());
  CHECK(c.counts().fit_requests == fits.size());
  std::map<int64_t, int> asked;
  for (const auto& f : fits) {
    CHECK(f.rank_name == "rank-1");
    CHECK(f.rank == 1);
    CHECK(f.world_size == 2);
    CHECK(f.budget_bytes == doctest::Approx(12e9));
    CHECK(f.forecast_bytes > f.budget_bytes);
    CHECK(f.batch == msomni::testing::sawtooth_batch(f.step));  // the batch the forecast saw
    ++asked[f.step];
  }
  // Late in the run the forecast has learned the mix: the steps asked are the video batches.
  size_t late = 0, late_video = 0;
  for (const auto& [step, n] : asked)
    if (step > 40) ++late, late_video += msomni::testing::sawtooth_batch(step).video_samples > 0;
  CHECK(late > 0);
  CHECK(late_video == late);
}
