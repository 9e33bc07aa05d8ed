// msomni job turns msomni-run's metrics.jsonl lines into step reports for the scheduler's
// predictor: the step spans the checkpoint the rank stood still for after it.
#include "job_runner.hpp"

#include <doctest/doctest.h>

using msomni::cli::step_report_from;

TEST_CASE("msomni job: a metrics line with a checkpoint phase becomes a step report that spans it") {
  const auto r = step_report_from(
      "crit", R"({"step":100,"loss":2.5,"world_size":2,"step_time_ms":800.000,"tokens_per_s":10.0,"data_wait_ms":200.000,"checkpoint_ms":400.000,"downgraded_samples":0,"time_ms":1})");
  REQUIRE(r);
  CHECK(r->job == "crit");
  CHECK(r->step_s == doctest::Approx(1.2));
  CHECK(r->data_wait_s == doctest::Approx(0.2));
  CHECK(r->checkpoint_s == doctest::Approx(0.4));
  CHECK(r->bubble_share == 0);
}

TEST_CASE("msomni job: a metrics line of an older msomni-run without checkpoint_ms reports no phase") {
  const auto r = step_report_from("j", R"({"step":3,"step_time_ms":500.0,"data_wait_ms":100.0})");
  REQUIRE(r);
  CHECK(r->step_s == doctest::Approx(0.5));
  CHECK(r->checkpoint_s == 0);
}

TEST_CASE("msomni job: a metrics line without a positive step time is no step report") {
  CHECK_FALSE(step_report_from("j", R"({"step":3,"data_wait_ms":100.0})"));
  CHECK_FALSE(step_report_from("j", R"({"step":3,"step_time_ms":0.0})"));
  CHECK_FALSE(step_report_from("j", R"({"step":3,"step_time_ms":"fast"})"));
  CHECK_FALSE(step_report_from("j", "not json at all"));
}
