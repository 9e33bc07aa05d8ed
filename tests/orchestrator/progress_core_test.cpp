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
