// Turns step records into what a person and a script read: the terminal progress line
// (step/total, loss, tokens/s, ETA) and one metrics record per step (the shell writes it to
// metrics.jsonl, orchestrator_json.hpp). Pure: time comes in as an argument; nothing is
// printed or written here.
#pragma once

#include "core/time_point.hpp"
#include "messages/training_messages.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace msomni::orchestrator {

// One metrics.jsonl record: the step as rank 0 reported it, in the units the journal uses.
struct metrics_record {
  uint64_t step = 0;
  double loss = 0;  // may be non-finite
  uint32_t world_size = 0;
  double step_time_ms = 0;
  double tokens_per_s = 0;
  double data_wait_ms = 0;
  double checkpoint_ms = 0;
  uint64_t downgraded_samples = 0;
  int64_t time_ms = 0;  // Unix time, supplied by the caller
  std::vector<msg::bad_sample_count> bad_samples;  // this step's, in the record's order
  double grad_norm = 0;  // may be non-finite
  bool optimizer_skipped = false;
  double compute_ms_max = 0, compute_ms_mean = 0;  // the slowest rank's compute, and the mean
};

class progress_core {
 public:
  explicit progress_core(uint64_t total_steps) : total_(total_steps) {}

  // Records a step (duplicates and stale steps are ignored: returns nullopt).
  // Otherwise returns the metrics record for it; `wall_ms` (Unix time in ms, supplied by
  // the caller) goes into the record so pauses can be measured across processes.
  std::optional<metrics_record> on_step(const msg::step_record& r, time_point now, int64_t wall_ms = 0);

  // After a rollback to `step`, replayed steps are recorded again. True when steps already
  // recorded will be repeated (a new attempt begins).
  bool rollback_to(uint64_t step) {
    const bool repeats = last_step_ > step;
    last_step_ = std::min(last_step_, step);
    // The ranks may load a checkpoint committed at the barrier, past `step`: the next record
    // is no gap.
    rolled_back_ = true;
    return repeats;
  }

  // Steps up to `step` are recorded already (by an earlier leader of the job): records of
  // them are ignored from now on.
  void resume_after(uint64_t step) {
    last_step_ = std::max(last_step_, step);
    continues_ = true;
  }

  // Steps that never came: a record past the next step (after this process recorded one, or
  // resumed after an earlier leader's) leaves [first, last] out of metrics.jsonl. earlier:
  // the first record of a run that resumed from a checkpoint past what metrics.jsonl held
  // (expect_after): those steps were trained by an earlier attempt.
  struct step_gap {
    uint64_t first = 0, last = 0;
    bool earlier = false;
  };
  // metrics.jsonl of earlier attempts ends at `step`: a first record past step + 1 is a gap.
  void expect_after(uint64_t step) { expected_after_ = step; }
  std::optional<step_gap> take_gap() { return std::exchange(gap_, std::nullopt); }

  // Bad samples (all ranks): the events.jsonl note for the step on_step last accepted, when
  // it had any (at most bad_sample_notes_max steps get one; metrics.jsonl has every step).
  static constexpr uint64_t bad_sample_notes_max = 100;
  std::optional<std::string> take_bad_samples_note() { return std::exchange(bad_note_, std::nullopt); }
  uint64_t bad_samples_total() const { return bad_total_; }
  // "bad samples 3: corrupt_image=2 missing_member=1" (or "bad samples 0"), and the counts.
  std::string bad_samples_summary() const;
  const std::map<std::string, uint64_t>& bad_samples_by_reason() const { return bad_by_reason_; }
  // Good samples decoded by bytes that are another format than their names say (all ranks).
  uint64_t mismatched_names() const { return mismatched_; }

  std::string progress_line() const;
  // "N steps in T s, loss A -> B, X tokens/s at the end" for the end-of-job line.
  std::string summary() const;
  uint64_t last_step() const { return last_step_; }
  bool finished() const { return last_step_ >= total_; }

 private:
  uint64_t total_;
  uint64_t last_step_ = 0;
  bool continues_ = false;  // the next record should be last_step_ + 1
  bool rolled_back_ = false;  // the next record may be past it
  std::optional<uint64_t> expected_after_;  // expect_after, for the first record
  std::optional<step_gap> gap_;
  double last_loss_ = 0;
  double first_loss_ = 0;
  double tokens_per_s_ = 0;
  std::optional<time_point> first_at_;
  uint64_t first_step_ = 0;
  time_point last_at_{};
  std::map<std::string, uint64_t> bad_by_reason_;  // bounded by the data pipeline's reasons
  uint64_t bad_total_ = 0;
  uint64_t mismatched_ = 0;
  uint64_t bad_notes_ = 0;
  std::optional<std::string> bad_note_;
};

}  // namespace msomni::orchestrator
