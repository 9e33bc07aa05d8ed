// The memory watermark predictor keeps a real job out of an out-of-memory failure: with a
// memory.device_memory_gb below the peak of its heaviest steps (but above the first steps'),
// the job fails with the out-of-memory numbers when the predictor is off, and with it on
// completes every step, the steps the forecast said would not fit run as parts (journaled as
// memory_fit events and counted), and every step's loss is the unconstrained run's.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace fs = std::filesystem;
using msomni::testing::json;
using msomni::testing::parse_json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

constexpr int steps = 48;
constexpr int warm_up = 12;  // steps before the predictor has seen enough to forecast from

std::string run(const fs::path& run_dir, const std::string& args) {
  // Deep prefetch: the next 12 steps (2 micro-batches each) are packed when a step's sample
  // goes out, so a fit request has up to 9 steps to arrive before its step starts, even when
  // a loaded machine slows the control process down.
  return std::string(MSOMNI_RUN_BINARY) + " " + MSOMNI_SOURCE_DIR + "/configs/quickstart.toml --run-dir " +
         run_dir.string() + " --set training.steps=" + std::to_string(steps) +
         " --set io.prefetch_depth=24 --set checkpoint.interval_steps=1000 --set health.preflight=off " + args;
}

// step -> the largest peak over the ranks, from the run's memory traces; `lowest` gets the
// smallest peak any rank had.
std::map<int, double> peaks_of(const fs::path& run_dir, double* lowest = nullptr) {
  std::map<int, double> out;
  for (const char* rank : {"rank-0", "rank-1"})
    for (const auto& l : read_json_lines(run_dir / "memory" / (std::string(rank) + ".jsonl"))) {
      const double peak = l.at("peak_bytes").get<double>();
      auto& p = out[l.at("step").get<int>()];
      p = std::max(p, peak);
      if (lowest) *lowest = std::min(*lowest, peak);
    }
  return out;
}

std::map<int, double> losses_of(const fs::path& run_dir) {
  std::map<int, double> out;
  for (const auto& m : read_json_lines(run_dir / "metrics.jsonl")) out[m.at("step").get<int>()] = m.at("loss").get<double>();
  return out;
}

std::string gb(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9f", bytes / 1e9);
  return buf;
}

}  // namespace

TEST_CASE("a budget below the heaviest steps is an out-of-memory failure without the predictor and fits with it") {
  msomni::testing::temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);

  // The unconstrained run: its peaks choose the budget, its losses are the reference.
  const auto free_dir = dir.path() / "unconstrained";
  const auto a = run_command(run(free_dir, ""));
  CAPTURE(a.output);
  REQUIRE(a.exit_code == 0);
  double low = 1e300;
  const auto peaks = peaks_of(free_dir, &low);
  REQUIRE(peaks.size() == steps);
  double head = 0, top = 0;
  for (const auto& [step, p] : peaks) {
    if (step <= warm_up) head = std::max(head, p);
    top = std::max(top, p);
  }
  INFO("peaks: first " << warm_up << " steps at most " << head << " B, all steps " << low << " .. " << top << " B");
  // The data order is fixed (training.seed): some later step is heavier than every early one.
  // (Parameters and optimiser state are most of a step's peak; the batch moves it by a few %.)
  REQUIRE(top > head * 1.005);
  const double device = (head + top) / 2;
  // The margin covers the forecast's error. A step's features describe the whole step, not
  // its largest micro-batch, so a forecast here can be off by most of the batches' spread: the
  // margin is that spread, and every step forecast above the lightest peak seen is fitted.
  const double margin = device - low;
  int over = 0;
  for (const auto& [step, p] : peaks) over += p > device;
  REQUIRE(over >= 1);

  // Without the predictor the first heavy step fails the job with the out-of-memory numbers.
  const auto off_dir = dir.path() / "off";
  const auto b = run_command(run(off_dir, "--set memory.predictor_enabled=false --set memory.device_memory_gb=" + gb(device)));
  CAPTURE(b.output);
  CHECK(b.exit_code == 1);
  const auto failed = parse_json(read_text(off_dir / "summary.json"));
  CHECK(failed.at("state") == "failed");
  CHECK(failed.at("reason").get<std::string>().find("out of memory: cpu allocation of ") != std::string::npos);

  // With it, every step completes; the steps it fitted ran as parts.
  const auto on_dir = dir.path() / "on";
  const auto c = run_command(run(on_dir, "--set memory.device_memory_gb=" + gb(device) +
                                             " --set memory.safety_margin_gb=" + gb(margin)));
  std::string rank_logs;  // each fitted step is a line of its rank's log, so is a late request
  if (fs::is_directory(on_dir / "logs"))
    for (const auto& f : fs::directory_iterator(on_dir / "logs")) rank_logs += read_text(f.path());
  CAPTURE(c.output);
  CAPTURE(rank_logs);
  REQUIRE(c.exit_code == 0);
  const auto events = read_json_lines(on_dir / "events.jsonl");
  int fitted = 0, split = 0;
  for (const auto& e : events) {
    if (e.at("kind") != "memory_fit") continue;
    CAPTURE(e.dump());
    ++fitted;
    CHECK(e.at("forecast_bytes").get<double>() > e.at("budget_bytes").get<double>());
    CHECK(e.at("budget_bytes").get<double>() == doctest::Approx(device - margin));
    CHECK(e.at("keyframe_cuts") == 0);
    CHECK(e.at("peak_bytes").get<double>() <= device);
    split += e.at("micro_batches_split").get<int>() > 0;
  }
  CHECK(fitted >= 1);
  CHECK(split >= 1);
  CHECK(rank_logs.find("MEMORY_FIT step ") != std::string::npos);
  // The parts of a step train its samples with its gradient: every step's loss is the
  // unconstrained run's (up to float rounding, which the split steps change).
  const auto want = losses_of(free_dir), got = losses_of(on_dir);
  REQUIRE(got.size() == want.size());
  for (const auto& [step, loss] : want) {
    CAPTURE(step);
    CHECK(got.at(step) == doctest::Approx(loss).epsilon(1e-4));
  }
  // And the fitted steps kept within the device: the trace's peaks say so.
  for (const auto& [step, p] : peaks_of(on_dir)) {
    CAPTURE(step);
    CHECK(p <= device);
  }
}
