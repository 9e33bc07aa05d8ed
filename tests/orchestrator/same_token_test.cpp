// The control token's comparison: equal tokens only, never an empty one.
#include "orchestrator_actor.hpp"

#include <doctest/doctest.h>

using msomni::orchestrator::same_token;

TEST_CASE("same_token: equal non-empty tokens only") {
  CHECK(same_token("abc123", "abc123"));
  CHECK_FALSE(same_token("abc124", "abc123"));
  CHECK_FALSE(same_token("abc12", "abc123"));
  CHECK_FALSE(same_token("", ""));
  CHECK_FALSE(same_token(std::string("a\0b", 3), std::string("a\0c", 3)));
}
