// When a rank's checkpoints happen and when their failures end the job: a pure core over
// step numbers and the outcomes every rank agreed on (no clock, thread or file here; the
// rank_checkpointer shell asks it and does the I/O and the collectives).
//
//   idle --interval boundary or last step: save due--> pending (shards being written)
//   pending --after every step: the ranks agree whether all shards are durable--> commit
//   commit ok --> idle, failures_in_a_row = 0
//   commit failed --> idle, failures_in_a_row + 1; at max_consecutive_failures: give up
#pragma once

#include <cstdint>

namespace msomni::ckpt {

class save_cadence {
 public:
  save_cadence(uint64_t interval_steps, uint64_t max_consecutive_failures);

  // A snapshot is due after `step` (the final step of a run always gets one).
  bool due(uint64_t step, bool last) const;
  // With a save in flight, the ranks agree after every step whether all shards are on disk
  // (a cheap collective); `ranks_not_done` is what that collective summed. Commit when 0.
  static bool commit_now(uint64_t ranks_not_done) { return ranks_not_done == 0; }

  enum class verdict { carry_on, give_up };
  // The agreed outcome of one save; failures count only in a row.
  verdict on_outcome(bool committed);

  uint64_t failures_in_a_row() const { return failures_in_a_row_; }
  uint64_t max_consecutive_failures() const { return max_failures_; }

 private:
  uint64_t interval_steps_;
  uint64_t max_failures_;
  uint64_t failures_in_a_row_ = 0;
};

}  // namespace msomni::ckpt
