// record_lineage: records in flight at a rollback are held, and journaled only when the
// rollback's resumed step (or a superseded epoch that completed the job) shows them the state's own.
#include "record_lineage.hpp"

#include <doctest/doctest.h>

using msomni::orchestrator::record_lineage;

namespace {
msomni::msg::step_record record(uint64_t epoch, uint64_t step) {
  msomni::msg::step_record r;
  r.epoch = epoch;
  r.step = step;
  return r;
}
}  // namespace

TEST_CASE("held records up to the step a rollback resumed from are released, the rest discarded") {
  record_lineage l;
  CHECK(l.on_record(record(1, 9)).record);  // no rollback yet: journaled as it comes
  l.on_rollback_plan(2);
  for (uint64_t s : {10u, 11u, 12u}) CHECK_FALSE(l.on_record(record(1, s)).record);  // in flight: held
  CHECK(l.held() == 3);
  const auto out = l.on_record(record(2, 12));  // the ranks loaded the checkpoint of step 11
  REQUIRE(out.held.size() == 2);
  CHECK(out.held[0].step == 10);
  CHECK(out.held[1].step == 11);
  REQUIRE(out.record);
  CHECK(out.record->step == 12);
  CHECK(l.held() == 0);
  CHECK(l.on_record(record(2, 13)).held.empty());  // once per rollback epoch
}

TEST_CASE("a rank leaving at once, or finishing in a superseded epoch, releases what its state holds") {
  record_lineage a;
  a.on_rollback_plan(3);
  a.on_record(record(2, 20));
  a.on_record(record(2, 21));
  const auto resumed = a.on_rank_left({"rank-0", 3, 20, "finished", 0});  // loaded step 20, the last
  REQUIRE(resumed.size() == 1);
  CHECK(resumed[0].step == 20);

  record_lineage b;
  b.on_rollback_plan(5);
  b.on_record(record(4, 30));
  b.on_record(record(3, 31));  // another epoch's record: stays held
  const auto done = b.on_rank_left({"rank-1", 4, 30, "finished", 0});
  REQUIRE(done.size() == 1);
  CHECK(done[0].step == 30);
  CHECK(b.held() == 1);
}
