// The run directory's journals: metrics.jsonl (one record per step) and events.jsonl (every
// elastic, failure and checkpoint event with its timestamp and reason). Appends are flushed
// line by line so a crash loses at most the line being written.
#pragma once

#include "core/json_escape.hpp"

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>

namespace msomni::orchestrator {

class run_journal {
 public:
  explicit run_journal(const std::filesystem::path& run_dir);
  ~run_journal();
  run_journal(const run_journal&) = delete;
  run_journal& operator=(const run_journal&) = delete;

  void metric(const std::string& json_line);
  // {"time": <unix ms>, "event": kind, "reason": ...}
  void event(const std::string& kind, const std::string& reason);

 private:
  std::mutex mutex_;
  std::FILE* metrics_ = nullptr;
  std::FILE* events_ = nullptr;
};

using msomni::json_escape;  // core/json_escape.hpp

}  // namespace msomni::orchestrator
