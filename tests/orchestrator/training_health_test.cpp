// The training health core: non-finite steps are events, max_nonfinite_steps in a row roll
// back once and stop when it recurs, a finite step ends a streak, and a loss far above the
// running median is a spike (and needs history first).
#include "training_health.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace msomni::orchestrator;

namespace {

const double nan_value = std::nan("");

bool has_event(const health_verdict& v, const std::string& kind) {
  for (const auto& e : v.events)
    if (e.kind == kind) return true;
  return false;
}

}  // namespace

TEST_CASE("non-finite steps in a row roll back once, then stop when it recurs") {
  training_health h({3, 5.0, 100, 20});
  CHECK(h.on_step(1, 2.0, 1.0, false).action == health_verdict::act::carry_on);
  auto v = h.on_step(2, nan_value, nan_value, true);
  CHECK(v.action == health_verdict::act::carry_on);
  REQUIRE(v.events.size() == 1);
  CHECK(v.events[0].kind == "nonfinite_step");
  CHECK(v.events[0].detail == "step 2: loss nan, gradient norm nan; the optimizer skipped the update (1 in a row, limit 3)");
  CHECK(h.on_step(3, 2.0, INFINITY, true).action == health_verdict::act::carry_on);
  v = h.on_step(4, nan_value, 1.0, false);
  CHECK(v.action == health_verdict::act::roll_back);
  CHECK(v.reason == "3 non-finite steps in a row (steps 2..4); rolling back to the last checkpoint");
  CHECK(has_event(v, "training_rollback"));
  h.on_rolled_back();
  CHECK(h.streak() == 0);
  for (uint64_t s = 3; s <= 4; ++s) CHECK(h.on_step(s, nan_value, nan_value, true).action == health_verdict::act::carry_on);
  v = h.on_step(5, nan_value, nan_value, true);
  CHECK(v.action == health_verdict::act::stop);
  CHECK(v.reason.find("again after rolling back") != std::string::npos);
  CHECK(has_event(v, "training_diverged"));
  CHECK(h.counts().nonfinite_steps == 6);
  CHECK(h.counts().skipped_steps == 5);
  CHECK(h.counts().rollbacks == 1);
}

TEST_CASE("a finite step ends a streak, and a rollback that was not planned is asked for again") {
  training_health h({2, 0.0, 100, 20});
  CHECK(h.on_step(1, nan_value, 1.0, false).action == health_verdict::act::carry_on);
  CHECK(h.on_step(2, 1.0, 1.0, false).action == health_verdict::act::carry_on);
  CHECK(h.streak() == 0);
  CHECK(h.on_step(3, nan_value, 1.0, false).action == health_verdict::act::carry_on);
  CHECK(h.on_step(4, nan_value, 1.0, false).action == health_verdict::act::roll_back);
  // The core could not roll back (an elastic change was in flight): no rollback counted.
  CHECK(h.on_step(5, nan_value, 1.0, false).action == health_verdict::act::roll_back);
  CHECK(h.counts().rollbacks == 0);
}

TEST_CASE("a loss far above the running median is a spike, once there is history") {
  training_health h({3, 3.0, 50, 20});
  for (uint64_t s = 1; s <= 10; ++s) CHECK_FALSE(has_event(h.on_step(s, s == 5 ? 100.0 : 2.0, 1.0, false), "loss_spike"));
  for (uint64_t s = 11; s <= 30; ++s) CHECK(h.on_step(s, 2.0 + 0.01 * static_cast<double>(s % 3), 1.0, false).events.empty());
  const auto v = h.on_step(31, 7.0, 1.0, false);
  REQUIRE(has_event(v, "loss_spike"));
  CHECK(v.events[0].detail.find("step 31: loss 7 is ") != std::string::npos);
  CHECK(v.action == health_verdict::act::carry_on);
  CHECK_FALSE(has_event(h.on_step(32, 5.9, 1.0, false), "loss_spike"));  // below 3x the median 2.01
  CHECK(h.counts().loss_spikes == 1);
}

TEST_CASE("near a loss of zero a few times the median is noise, not a spike") {
  training_health h({3, 5.0, 100, 20});
  for (uint64_t s = 1; s <= 40; ++s) CHECK(h.on_step(s, 0.001 + 0.0001 * static_cast<double>(s % 3), 1.0, false).events.empty());
  CHECK(h.on_step(41, 0.05, 1.0, false).events.empty());  // 50x the median, but 0.05 nats above it
  CHECK(h.counts().loss_spikes == 0);
}

TEST_CASE("non-finite numbers are named, finite ones printed as JSON numbers") {
  CHECK(number_or_nonfinite_name(nan_value) == "nan");
  CHECK(number_or_nonfinite_name(INFINITY) == "inf");
  CHECK(number_or_nonfinite_name(-INFINITY) == "-inf");
  CHECK(number_or_nonfinite_name(1.5) == "1.5");
}
