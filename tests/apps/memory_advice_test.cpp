// The memory watermark predictor on a real job: with memory.predictor_enabled (the default)
// every rank's first forecast is journaled as memory_advice with its numbers; switched off,
// no advice appears while the samples are still recorded.
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

namespace fs = std::filesystem;
using msomni::testing::read_json_lines;
using msomni::testing::run_command;

namespace {

std::string run(const fs::path& run_dir, const std::string& args) {
  return std::string(MSOMNI_RUN_BINARY) + " " + MSOMNI_SOURCE_DIR + "/configs/quickstart.toml --run-dir " +
         run_dir.string() + " --set training.steps=8 " + args;
}

}  // namespace

TEST_CASE("the memory predictor journals each rank's reservation advice, and nothing when it is off") {
  msomni::testing::temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  const auto on = dir.path() / "on";
  const auto r = run_command(run(on, "--set memory.device_memory_gb=0.5 --set memory.safety_margin_gb=0.01"));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  std::set<std::string> advised;
  for (const auto& e : read_json_lines(on / "events.jsonl")) {
    if (e.at("kind") != "memory_advice") continue;
    advised.insert(e.at("rank").get<std::string>());
    CHECK(e.at("action") == "reserve");
    CHECK(e.at("fits") == true);
    const double forecast = e.at("forecast_gb"), reserve = e.at("gb");
    CHECK(forecast > 0);
    CHECK(reserve == doctest::Approx(forecast + 0.01));
    CHECK(e.at("reason").get<std::string>().find(" of 0.500 GB: reserve ") != std::string::npos);
  }
  CHECK(advised == std::set<std::string>{"rank-0", "rank-1"});

  const auto off = dir.path() / "off";
  const auto r2 = run_command(run(off, "--set memory.predictor_enabled=false"));
  CAPTURE(r2.output);
  REQUIRE(r2.exit_code == 0);
  for (const auto& e : read_json_lines(off / "events.jsonl")) CHECK(e.at("kind") != "memory_advice");
  CHECK(fs::exists(off / "memory" / "rank-0.jsonl"));
  // With it off, its keys would do nothing: refused before anything starts.
  const auto r3 = run_command(run(dir.path() / "refused", "--set memory.predictor_enabled=false --set memory.horizon_steps=3 --dry-run"));
  CHECK(r3.exit_code == 2);
  CHECK(r3.output.find("memory.horizon_steps") != std::string::npos);
}
