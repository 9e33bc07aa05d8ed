// The run directory's journals: metrics.jsonl (one record per step) and events.jsonl (every
// elastic, failure and checkpoint event with its timestamp and reason).
//
// Every line is written whole with one append and checked: a failed or short write is cut
// back to the previous line end, so a reader never meets a torn line, and the journal turns
// failed(): the caller stops the job loudly (a job whose record cannot be kept must not go
// on as if it could).
//
// Attempts: each line carries "attempt". A run directory's attempts are numbered 1, 2, ...
// across msomni-run starts (the counter lives in RUN_DIR/attempt) and rollbacks; an
// "attempt_started" event gives the step the attempt resumed from. A reader gets the
// effective curve by letting a metrics line of a later attempt replace every earlier line
// of the same or a later step.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <mutex>
#include <optional>
#include <string>

namespace msomni::orchestrator {

// What an event line says beyond its kind and reason, where the writer knows it.
struct event_context {
  std::optional<uint64_t> step;   // the job's last journaled step
  std::optional<uint64_t> epoch;  // the membership epoch
  std::string rank;               // the rank it is about
  std::string node;               // the node it is about
  // Further fields of this kind of event, added as they are (a JSON object; null: none), e.g.
  // a resume's accepted config changes: {"config_changes": [{"key", "saved", "now"}, ...]}.
  nlohmann::ordered_json fields;
};

class run_journal {
 public:
  // Opens (appends to) both journals and starts the next attempt from RUN_DIR/attempt.
  // Throws std::runtime_error when they cannot be opened.
  explicit run_journal(const std::filesystem::path& run_dir);
  ~run_journal();
  run_journal(const run_journal&) = delete;
  run_journal& operator=(const run_journal&) = delete;

  // False (and failed() from then on) when the line could not be written.
  bool metric(nlohmann::ordered_json record);  // a JSON object; "attempt" is added last
  // {"time_ms": <unix ms>, "event": kind, "reason": ..., "kind": kind, "step": S, "epoch": E,
  //  "rank": R, "node": N, ...ctx.fields, "attempt": A}: "event" and "kind" are the same name
  // ("event" is the older field, kept for readers of earlier runs); step, epoch, rank, node
  // and the further fields only where `ctx` knows them.
  bool event(const std::string& kind, const std::string& reason, const event_context& ctx = {});

  // Every event line written from now on also goes to `observer`, in journal order (called
  // with the journal's lock held: it must not write to the journal).
  void observe_events(std::function<void(const nlohmann::ordered_json&)> observer);

  // Starts the next attempt (a rollback: steps from `from_step` on are repeated) and
  // journals it; returns the new attempt number.
  uint64_t begin_attempt(uint64_t from_step, const std::string& cause);
  uint64_t attempt() const noexcept { return attempt_; }
  const std::filesystem::path& run_dir() const noexcept { return run_dir_; }

  bool failed() const noexcept { return failed_; }
  const std::string& failure() const noexcept { return failure_; }

 private:
  bool append(int fd, const std::string& line, const char* file);
  void store_attempt();

  std::filesystem::path run_dir_;
  std::mutex mutex_;
  int metrics_fd_ = -1;
  int events_fd_ = -1;
  std::atomic<uint64_t> attempt_{0};
  std::atomic<bool> failed_{false};
  std::string failure_;
  std::function<void(const nlohmann::ordered_json&)> observer_;
};

// What a leader taking over needs of an events.jsonl, in one pass (torn or foreign lines are
// skipped): the highest membership epoch (0: none), which it plans after, so that epochs a
// dead leader journaled but never committed to the store are not used twice; and one past
// the highest N of a "rank-N" it names (0: none), so that new ranks take no earlier name.
struct journal_history {
  uint64_t highest_epoch = 0;
  uint64_t next_rank_id = 0;
};
journal_history history_in(std::istream& events);

// The step of the last readable line of a metrics.jsonl (0: none): what the job has recorded,
// so that step records sent again by adopted ranks are not written twice.
uint64_t last_step_in(std::istream& metrics);

}  // namespace msomni::orchestrator
