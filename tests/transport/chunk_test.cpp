// Ring chunking: chunks tile the buffer exactly, sizes differ by at most one.
#include "collectives/communicator.hpp"

#include <doctest/doctest.h>

using msomni::transport::chunk_of;

TEST_CASE("chunks tile every size for every ring size") {
  for (size_t parts = 1; parts <= 9; ++parts)
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{8}, size_t{1000}, size_t{4099}}) {
      size_t next = 0, min = SIZE_MAX, max = 0;
      for (size_t i = 0; i < parts; ++i) {
        const auto c = chunk_of(n, parts, i);
        CHECK(c.offset == next);
        next += c.count;
        min = std::min(min, c.count);
        max = std::max(max, c.count);
      }
      CHECK(next == n);
      CHECK(max - min <= 1);
    }
}
