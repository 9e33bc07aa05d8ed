// Watching a running msomni job from a test: poll a condition, wait for its first
// checkpoint, and find a rank's pid through `msomni status --json`.
#pragma once

#include "support/process_runner.hpp"

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <regex>
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
  std::smatch g;
  if (!std::regex_search(r.output, g, std::regex("\"name\":\"" + name + "\",\"node\":\"[^\"]*\",\"pid\":(\\d+)")))
    return 0;
  return static_cast<pid_t>(std::stol(g[1]));
}

}  // namespace msomni::testing
