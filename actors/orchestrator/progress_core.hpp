// Turns step records into what a person and a script read: the terminal progress line
// (step/total, loss, tokens/s, ETA) and one metrics.jsonl record per step. Pure: time comes
// in as an argument; nothing is printed or written here.
#pragma once

#include "core/clock.hpp"
#include "messages/training_messages.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace msomni::orchestrator {

class progress_core {
 public:
  explicit progress_core(uint64_t total_steps) : total_(total_steps) {}

  // Records a step (duplicates and stale steps are ignored: returns nullopt).
  // Otherwise returns the metrics.jsonl line for it; `wall_ms` (Unix time in ms, supplied by
  // the caller) goes into the record so pauses can be measured across processes.
  std::optional<std::string> on_step(const msg::step_record& r, time_point now, int64_t wall_ms = 0);

  // After a rollback to `step`, replayed steps are recorded again. True when steps already
  // recorded will be repeated (a new attempt begins).
  bool rollback_to(uint64_t step) {
    const bool repeats = last_step_ > step;
    last_step_ = std::min(last_step_, step);
    return repeats;
  }

  std::string progress_line() const;
  // "N steps in T s, loss A -> B, X tokens/s at the end" for the end-of-job line.
  std::string summary() const;
  uint64_t last_step() const { return last_step_; }
  bool finished() const { return last_step_ >= total_; }

 private:
  uint64_t total_;
  uint64_t last_step_ = 0;
  double last_loss_ = 0;
  double first_loss_ = 0;
  double tokens_per_s_ = 0;
  std::optional<time_point> first_at_;
  uint64_t first_step_ = 0;
  time_point last_at_{};
};

}  // namespace msomni::orchestrator
