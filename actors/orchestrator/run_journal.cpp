// run_journal (see run_journal.hpp).
#include "run_journal.hpp"

#include <chrono>
#include <stdexcept>

namespace msomni::orchestrator {

run_journal::run_journal(const std::filesystem::path& run_dir) {
  metrics_ = std::fopen((run_dir / "metrics.jsonl").c_str(), "a");
  events_ = std::fopen((run_dir / "events.jsonl").c_str(), "a");
  if (!metrics_ || !events_) throw std::runtime_error("cannot open journals in " + run_dir.string());
}

run_journal::~run_journal() {
  if (metrics_) std::fclose(metrics_);
  if (events_) std::fclose(events_);
}

void run_journal::metric(const std::string& json_line) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(metrics_, "%s\n", json_line.c_str());
  std::fflush(metrics_);
}

void run_journal::event(const std::string& kind, const std::string& reason) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(events_, "{\"time_ms\":%lld,\"event\":\"%s\",\"reason\":\"%s\"}\n", static_cast<long long>(ms),
               json_escape(kind).c_str(), json_escape(reason).c_str());
  std::fflush(events_);
}

}  // namespace msomni::orchestrator
