// data_watch: downgrade spans and slow data steps become bounded notes and one summary.
#include "data_watch.hpp"

#include <doctest/doctest.h>

using msomni::orchestrator::data_watch;

namespace {
msomni::msg::step_record step(uint64_t n, uint64_t downgraded, double wait_ms = 0) {
  msomni::msg::step_record r;
  r.step = n;
  r.downgraded_samples = downgraded;
  r.data_wait_ns = static_cast<int64_t>(wait_ms * 1e6);
  return r;
}
}  // namespace

TEST_CASE("a downgrade span gets a note where it begins and one where it ends, with its samples") {
  data_watch w(200);
  CHECK(w.on_step(step(1, 0)).empty());
  auto n = w.on_step(step(2, 3));
  REQUIRE(n.size() == 1);
  CHECK(n[0].kind == "video_downgrade");
  CHECK(n[0].detail.find("from step 2") == 0);
  CHECK(w.on_step(step(3, 2)).empty());  // the span goes on: no note
  n = w.on_step(step(4, 0));
  REQUIRE(n.size() == 1);
  CHECK(n[0].kind == "video_downgrade_ended");
  CHECK(n[0].detail.find("steps 2..3: 5 video samples") == 0);
  w.on_step(step(5, 1));
  const auto last = w.finish();  // a span still open at the end is closed by finish
  REQUIRE(last);
  CHECK(last->detail.find("steps 5..5: 1 video samples") == 0);
  CHECK_FALSE(w.finish());
  CHECK(w.downgraded_total() == 6);
  CHECK(w.summary().find("video downgrades 6 in 2 spans") == 0);
}

TEST_CASE("a step waiting longer than io.max_data_wait_ms is noted, at most notes_max times, and all are counted") {
  data_watch w(50);
  CHECK(w.on_step(step(1, 0, 49.9)).empty());
  auto n = w.on_step(step(2, 0, 80));
  REQUIRE(n.size() == 1);
  CHECK(n[0].kind == "slow_data");
  CHECK(n[0].detail == "step 2 waited 80.0 ms for data, over io.max_data_wait_ms 50.0 ms");
  size_t notes = 1;
  for (uint64_t s = 3; s < 3 + 2 * data_watch::notes_max; ++s) notes += w.on_step(step(s, 0, 60)).size();
  CHECK(notes == data_watch::notes_max);
  CHECK(w.slow_steps() == 1 + 2 * data_watch::notes_max);
  CHECK(w.summary().find("201 steps waited over io.max_data_wait_ms 50.0 ms (max 80.0 ms)") != std::string::npos);
}

TEST_CASE("after a rollback an open span is not carried into the replayed steps") {
  data_watch w(200);
  w.on_step(step(7, 2));
  w.rollback();
  const auto n = w.on_step(step(5, 1));  // replayed: a new span begins
  REQUIRE(n.size() == 1);
  CHECK(n[0].kind == "video_downgrade");
  CHECK(w.summary().find("in 2 spans") != std::string::npos);
}
