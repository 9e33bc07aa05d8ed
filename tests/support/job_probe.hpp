// Watching a running msomni job from a test: poll a condition, wait for its first
// checkpoint, find a rank's pid through `msomni status --json`, read its steps' losses.
#pragma once

#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include "core/json_number.hpp"

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
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

}  // namespace msomni::testing
