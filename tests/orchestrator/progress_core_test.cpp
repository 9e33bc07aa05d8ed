// Orchestrator cores: the progress/metrics record.
#include "progress_core.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace std::chrono_literals;

TEST_CASE("progress records each step once, replays after a rollback, and estimates the ETA") {
  orchestrator::progress_core p(100);
  msg::step_record r;
  r.step = 1;
  r.loss = 5;
  r.world_size = 2;
  CHECK(p.on_step(r, time_point{0s}));
  CHECK_FALSE(p.on_step(r, time_point{1s}));  // duplicate
  r.step = 11;
  auto line = p.on_step(r, time_point{10s});
  REQUIRE(line);
  CHECK(line->step == 11);
  CHECK(line->world_size == 2);
  CHECK(p.progress_line().find("step 11/100") == 0);
  CHECK(p.progress_line().find("ETA 1m29s") != std::string::npos);  // 1 s per step, 89 left
  p.rollback_to(5);
  r.step = 6;
  CHECK(p.on_step(r, time_point{11s}));
}

TEST_CASE("a step that never came is named once as a gap, but a rollback's first record and a fresh start are none") {
  orchestrator::progress_core p(100);
  msg::step_record r;
  r.world_size = 1;
  r.step = 7;  // a resumed run's first record
  CHECK(p.on_step(r, time_point{0s}));
  CHECK_FALSE(p.take_gap());
  r.step = 8;
  CHECK(p.on_step(r, time_point{1s}));
  CHECK_FALSE(p.take_gap());
  r.step = 12;
  CHECK(p.on_step(r, time_point{2s}));
  const auto gap = p.take_gap();
  REQUIRE(gap);
  CHECK(gap->first == 9);
  CHECK(gap->last == 11);
  CHECK_FALSE(p.take_gap());
  // Ranks that load a checkpoint committed at the rollback's barrier start past its step.
  p.rollback_to(10);
  r.step = 15;
  CHECK(p.on_step(r, time_point{3s}));
  CHECK_FALSE(p.take_gap());
  // After an earlier leader's records, the next one is expected.
  orchestrator::progress_core q(100);
  q.resume_after(20);
  r.step = 23;
  CHECK(q.on_step(r, time_point{0s}));
  REQUIRE(q.take_gap());
}

TEST_CASE("a run that resumed past what metrics.jsonl held names the steps between as an earlier attempt's") {
  orchestrator::progress_core p(100);
  p.expect_after(419);  // metrics.jsonl ends at 419; the checkpoint loaded is step 420
  msg::step_record r;
  r.world_size = 1;
  r.step = 421;
  CHECK(p.on_step(r, time_point{0s}));
  const auto gap = p.take_gap();
  REQUIRE(gap);
  CHECK(gap->first == 420);
  CHECK(gap->last == 420);
  CHECK(gap->earlier);
  // A resume from an older checkpoint repeats steps: no gap.
  orchestrator::progress_core q(100);
  q.expect_after(419);
  r.step = 411;
  CHECK(q.on_step(r, time_point{0s}));
  CHECK_FALSE(q.take_gap());
}
