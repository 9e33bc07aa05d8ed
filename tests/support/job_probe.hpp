// Watching a running msomni job from a test: poll a condition, wait for its first
// checkpoint, and find a rank's pid through `msomni status --json`.
#pragma once

#include "support/process_runner.hpp"

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
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

}  // namespace msomni::testing
