// Which step records the journal takes around a rollback. Records of epochs before the last
// rollback plan (in flight when it went out) are mostly of steps that plan discards, so they
// are held back rather than journaled: a repeated step appears only under the attempt that
// the job's state descends from. But a checkpoint committed while the plan was on its way is
// the one the ranks load, and the steps up to it are the state's own. The rollback epoch's
// first word says which step it resumed from (its first record names the step after it; a
// rank leaving before any record, because the checkpoint it loaded was the last step, names
// it as its final step), and the held records up to that step are released then. A rank
// that completed the last step in an epoch a later plan superseded releases that epoch's
// held records too: the job ends with that epoch's state. Bounded (the oldest go first).
// Pure: records in, records to journal out. The elastic simulation test found the lost step.
#pragma once

#include "messages/control_messages.hpp"
#include "messages/training_messages.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace msomni::orchestrator {

struct released_records {
  std::vector<msg::step_record> held;     // the held records now known to be the state's own, by step
  std::optional<msg::step_record> record;  // the record that came in, unless it is held back
};

class record_lineage {
 public:
  static constexpr size_t held_max = 1024;

  // A plan whose members load the newest checkpoint went out.
  void on_rollback_plan(uint64_t epoch) { rollback_plan_epoch_ = std::max(rollback_plan_epoch_, epoch); }
  // What to journal, in order (held first), when `r` comes in.
  released_records on_record(const msg::step_record& r);
  // The held records `r` shows to be the state's own, by step.
  std::vector<msg::step_record> on_rank_left(const msg::rank_left& r);

  size_t held() const { return held_.size(); }

 private:
  // Once per rollback epoch: the held records up to `resumed`; the others were discarded.
  std::vector<msg::step_record> resumed(uint64_t epoch, uint64_t step);

  uint64_t rollback_plan_epoch_ = 0;
  uint64_t resumed_epoch_ = 0;  // the rollback epoch whose first word was seen
  std::map<uint64_t, msg::step_record> held_;  // by step
};

}  // namespace msomni::orchestrator
