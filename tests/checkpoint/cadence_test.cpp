// The save cadence core: when a save is due, when the ranks commit, and that only failures
// in a row count towards giving up.
#include "save_cadence.hpp"

#include <doctest/doctest.h>

using msomni::ckpt::save_cadence;

TEST_CASE("a save is due at every interval boundary and at the last step") {
  const save_cadence c(50, 3);
  CHECK(c.due(50, false));
  CHECK(c.due(100, false));
  CHECK_FALSE(c.due(51, false));
  CHECK(c.due(73, true));
  CHECK(save_cadence::commit_now(0));
  CHECK_FALSE(save_cadence::commit_now(1));
}

TEST_CASE("only failed saves in a row count, and the limit gives up") {
  save_cadence c(10, 3);
  CHECK(c.on_outcome(false) == save_cadence::verdict::carry_on);
  CHECK(c.on_outcome(false) == save_cadence::verdict::carry_on);
  CHECK(c.on_outcome(true) == save_cadence::verdict::carry_on);
  CHECK(c.failures_in_a_row() == 0);
  CHECK(c.on_outcome(false) == save_cadence::verdict::carry_on);
  CHECK(c.on_outcome(false) == save_cadence::verdict::carry_on);
  CHECK(c.on_outcome(false) == save_cadence::verdict::give_up);
  CHECK(c.failures_in_a_row() == 3);
}

TEST_CASE("a limit of 1 gives up at the first failure, and 0 is treated as 1") {
  save_cadence one(10, 1), zero(10, 0);
  CHECK(one.on_outcome(false) == save_cadence::verdict::give_up);
  CHECK(zero.on_outcome(false) == save_cadence::verdict::give_up);
  CHECK(save_cadence(0, 3).due(7, false));  // an interval of 0 means every step
}
