// The slot (local index, hence GPU) a node agent gives a new rank: the lowest one free, so a
// replacement takes the GPU its predecessor left and no two live ranks share one.
#include "node_slots.hpp"

#include <doctest/doctest.h>

using msomni::agent::lowest_free_slot;

TEST_CASE("a new rank takes the lowest slot no live rank holds") {
  CHECK(lowest_free_slot({}) == 0);
  CHECK(lowest_free_slot({{"rank-0", 0}}) == 1);
  CHECK(lowest_free_slot({{"rank-0", 0}, {"rank-1", 1}}) == 2);
  CHECK(lowest_free_slot({{"rank-1", 1}}) == 0);                // rank-0 died: its replacement gets slot 0
  CHECK(lowest_free_slot({{"rank-2", 0}, {"rank-1", 2}}) == 1);  // names do not matter, slots do
}
