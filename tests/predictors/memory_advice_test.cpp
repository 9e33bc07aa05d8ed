// Forecast -> advice: reserve forecast + margin, evict what co-located work holds beyond the rest.
#include "memory_advice.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace msomni::predict;

TEST_CASE("advice reserves forecast plus margin and evicts guests that do not fit beside it") {
  memory_forecast f;
  f.peak_bytes = {30, 50, 40};
  f.max_bytes = 50;
  const auto roomy = advise_memory(f, 3, 10, 100, 20);
  CHECK(roomy.action == memory_action::reserve);
  CHECK(to_string(roomy.action) == "reserve");
  CHECK(roomy.rank == 3);
  CHECK(roomy.reserve_bytes == 60);
  CHECK(roomy.lendable_bytes == 40);
  CHECK(roomy.evict_bytes == 0);
  CHECK(roomy.fits);
  const auto crowded = advise_memory(f, 3, 10, 100, 55);
  CHECK(crowded.action == memory_action::evict);
  CHECK(to_string(crowded.action) == "evict");
  CHECK(crowded.evict_bytes == 15);
  const auto too_big = advise_memory(f, 0, 60, 100, 5);
  CHECK_FALSE(too_big.fits);
  CHECK(too_big.reserve_bytes == 100);
  CHECK(too_big.evict_bytes == 5);
  CHECK_THROWS_AS(advise_memory(f, 0, -1, 100), std::invalid_argument);
  CHECK_THROWS_AS(advise_memory(f, 0, 1, 0), std::invalid_argument);
}
