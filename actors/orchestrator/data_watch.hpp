// What the data pipeline did to training, judged per journaled step: spans of steps in which
// videos were decoded keyframe-only because the tensor stage could not keep up (a note when
// a span begins and one when it ends), and steps whose data wait passed io.max_data_wait_ms
// (a note each). Notes for about notes_max downgrade spans and notes_max slow steps at most;
// the summary counts them all and metrics.jsonl has every step. Pure: records in, notes out.
#pragma once

#include "messages/training_messages.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msomni::orchestrator {

struct data_note {
  std::string kind;  // video_downgrade | video_downgrade_ended | slow_data
  std::string detail;
};

class data_watch {
 public:
  static constexpr uint64_t notes_max = 100;
  explicit data_watch(double max_data_wait_ms) : max_wait_ms_(max_data_wait_ms) {}

  std::vector<data_note> on_step(const msg::step_record& r);
  // The open downgrade span's end note, at the end of the job (none when no span is open).
  std::optional<data_note> finish();
  // After a rollback the replayed steps are judged again; an open span ends where it stood.
  void rollback() { span_.reset(); }

  uint64_t downgraded_total() const { return downgraded_total_; }
  uint64_t slow_steps() const { return slow_steps_; }
  // "video downgrades 12 in 2 spans; 3 steps waited over io.max_data_wait_ms 200 ms (max 512.3 ms)".
  std::string summary() const;

 private:
  struct span {
    uint64_t first = 0, last = 0, samples = 0;
  };
  data_note end_note(const span& s) const;

  double max_wait_ms_;
  std::optional<span> span_;
  uint64_t spans_ = 0, downgraded_total_ = 0, downgrade_notes_ = 0;
  uint64_t slow_steps_ = 0, slow_notes_ = 0;
  double slowest_ms_ = 0;
};

}  // namespace msomni::orchestrator
