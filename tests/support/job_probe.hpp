// Watching a running msomni job from a test: poll a condition, wait for its first
// checkpoint, find a rank's pid through `msomni status --json`, read its steps' losses and
// world sizes, count how often a rank's log ran each step, and the largest loss gap between
// two runs of one config.
#pragma once

#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include "core/json_number.hpp"

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>

namespace msomni::testing {

inline bool wait_for(const std::function<bool()>& ok, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ok();
}

inline bool wait_for_checkpoint(const std::filesystem::path& run_dir, std::chrono::seconds limit = std::chrono::seconds(120)) {
  return wait_for([&] { return std::filesystem::exists(run_dir / "checkpoints" / "latest"); }, limit);
}

// The pid of rank `name` as `cli status --json` reports it; 0 when it is not listed.
inline pid_t rank_pid(const std::string& cli, const std::filesystem::path& run_dir, const std::string& name) {
  const auto r = run_command(cli + " status --json --run-dir " + run_dir.string());
  const auto status = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object() || !status.contains("ranks")) return 0;
  for (const auto& rank : status["ranks"])
    if (rank.value("name", "") == name) return static_cast<pid_t>(rank.value("pid", int64_t{0}));
  return 0;
}

// step -> (loss, world size) from a run's metrics.jsonl; `lines` counts every record (a step
// recorded twice counts twice). Empty while the file is not there.
struct step_losses {
  std::map<uint64_t, std::pair<double, int>> by_step;
  size_t lines = 0;
};
inline step_losses read_step_losses(const std::filesystem::path& metrics_jsonl) {
  step_losses s;
  for (const auto& r : read_json_lines(metrics_jsonl)) {
    ++s.lines;
    s.by_step[r.at("step").get<uint64_t>()] = {msomni::get_number(r, "loss").value(), r.at("world_size").get<int>()};
  }
  return s;
}

// The last step a run recorded in its metrics.jsonl (0 before the first).
inline uint64_t last_step(const std::filesystem::path& run_dir) {
  const auto s = read_step_losses(run_dir / "metrics.jsonl");
  return s.by_step.empty() ? 0 : s.by_step.rbegin()->first;
}

// True when a step after `after_step` ran at world size `world`.
inline bool has_world(const std::filesystem::path& metrics_jsonl, int world, uint64_t after_step) {
  for (const auto& [step, v] : read_step_losses(metrics_jsonl).by_step)
    if (step > after_step && v.second == world) return true;
  return false;
}

// STEP lines of one rank's log: how many times each step ran there.
inline std::map<uint64_t, int> step_counts(const std::filesystem::path& log) {
  std::map<uint64_t, int> n;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (const auto step = step_line_record(line); step.is_object()) ++n[step.at("step").get<uint64_t>()];
  return n;
}

// The largest loss difference of `other` to `reference` over the reference's steps: relative
// to the loss where it is above 1, absolute below (a relative bound would grow as the loss
// nears 0); infinite when `other` lacks one of the steps.
struct loss_gap {
  double worst = 0;
  uint64_t step = 0;
};
inline loss_gap largest_loss_gap(const step_losses& reference, const step_losses& other) {
  loss_gap g;
  for (const auto& [step, v] : reference.by_step) {
    const auto it = other.by_step.find(step);
    const double gap = it == other.by_step.end() ? std::numeric_limits<double>::infinity()
                                                 : std::abs(it->second.first - v.first) / std::max(1.0, std::abs(v.first));
    if (gap > g.worst) g = {gap, step};
  }
  return g;
}

}  // namespace msomni::testing
