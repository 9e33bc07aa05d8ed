// Keys whose feature is not built yet change nothing, so they are accepted only at their
// defaults (written out or left out) and refused otherwise, with the key and the reason:
// no setting is silently ignored.
#include "config/config_loader.hpp"
#include "support/config_text.hpp"

#include <doctest/doctest.h>

using namespace msomni::config;

namespace {

std::vector<config_error> errors_with(const std::vector<std::string>& sets);
std::vector<config_error> errors_with(const std::string& set) { return errors_with(std::vector<std::string>{set}); }
std::vector<config_error> errors_with(const std::vector<std::string>& sets) {
  try {
    (void)load_string(msomni::testing::valid_config_text(), "t.toml", sets);
  } catch (const config_errors& e) {
    return e.errors();
  }
  return {};
}

}  // namespace

TEST_CASE("a key of a feature not built yet is refused unless it is at its default") {
  for (const char* set :
       {"checkpoint.async=false", "checkpoint.incremental=true"}) {
    INFO(set);
    const auto errors = errors_with(set);
    REQUIRE(errors.size() == 1);
    CHECK(std::string(set).rfind(errors[0].key + "=", 0) == 0);
    CHECK(errors[0].reason.rfind("not built yet: ", 0) == 0);
    CHECK(errors[0].reason.find("leave it at its default") != std::string::npos);
    CHECK(errors[0].file == "--set[1]");  // located at the override
  }
}

TEST_CASE("the same keys written out at their defaults are accepted") {
  for (const char* set : {"memory.safety_margin_gb=3.5", "memory.device_memory_gb=80", "cluster.metrics_port=0",
                          "elasticity.scale_up_utilization=0.9", "checkpoint.async=true", "checkpoint.incremental=false",
                          "training.device=\"cpu\"", "training.device=\"auto\""}) {
    INFO(set);
    CHECK(errors_with(set).empty());
  }
}

TEST_CASE("the rank's memory budget and in-step sampling interval are built: any value in range is accepted") {
  for (const char* set : {"memory.device_memory_gb=40", "memory.device_memory_gb=0.001", "memory.sample_interval_ms=5"}) {
    INFO(set);
    CHECK(errors_with(set).empty());
  }
  const auto errors = errors_with("memory.device_memory_gb=0.0005");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].key == "memory.device_memory_gb");
}

TEST_CASE("the memory predictor's keys are accepted while it runs and refused when memory.predictor_enabled is false") {
  for (const char* set : {"memory.sequence_length=100", "memory.horizon_steps=5", "memory.safety_margin_gb=2",
                          "memory.pca_dims=8"}) {
    INFO(set);
    CHECK(errors_with(set).empty());
    const auto errors = errors_with(std::vector<std::string>{"memory.predictor_enabled=false", set});
    REQUIRE(errors.size() == 1);
    CHECK(std::string(set).rfind(errors[0].key + "=", 0) == 0);
    CHECK(errors[0].reason.find("memory.predictor_enabled = false") != std::string::npos);
    CHECK(errors[0].file == "--set[2]");
  }
  CHECK(errors_with(std::vector<std::string>{"memory.predictor_enabled=false"}).empty());
}

TEST_CASE("the autoscale keys are refused while elasticity.autoscale is false and accepted with it") {
  for (const char* set : {"elasticity.scale_up_utilization=0.95", "elasticity.scale_up_sustain_s=60",
                          "elasticity.scale_down_utilization=0.5", "elasticity.scale_down_sustain_s=60",
                          "elasticity.autoscale_cooldown_s=10"}) {
    INFO(set);
    const auto errors = errors_with(set);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].reason.find("has no effect while elasticity.autoscale is false") != std::string::npos);
    try {
      (void)load_string(msomni::testing::valid_config_text(), "t.toml", {"elasticity.autoscale=true", set});
    } catch (const config_errors& e) {
      FAIL(e.what());
    }
  }
}

TEST_CASE("a job config holding a [scheduler] table is refused: msomni-sched reads it, a job does not") {
  const auto errors = errors_with("scheduler.idle_threshold=0.35");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].key == "scheduler");
  CHECK(errors[0].reason.find("configures msomni-sched") != std::string::npos);
  try {
    (void)load_string(msomni::testing::valid_config_text() + "\n[scheduler]\nidle_threshold = 0.35\n", "job.toml", {});
    FAIL("a [scheduler] table in a job config was accepted");
  } catch (const config_errors& e) {
    REQUIRE(e.errors().size() == 1);
    CHECK(e.errors()[0].file == "job.toml");
    CHECK(e.errors()[0].key == "scheduler");
  }
}

TEST_CASE("cluster.metrics_port takes a port, 0 for off, or auto, and nothing else") {
  for (const char* set : {"cluster.metrics_port=0", "cluster.metrics_port=9187", "cluster.metrics_port=auto",
                          "cluster.metrics_port=\"auto\""}) {
    INFO(set);
    CHECK(errors_with(set).empty());
  }
  for (const char* set : {"cluster.metrics_port=sometimes", "cluster.metrics_port=70000", "cluster.metrics_port=1.5"}) {
    INFO(set);
    const auto errors = errors_with(set);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].key == "cluster.metrics_port");
    CHECK(errors[0].file == "--set[1]");
  }
}
