// Log levels: parsing and filtering.
#include "core/log.hpp"

#include <doctest/doctest.h>

using namespace msomni::log;

TEST_CASE("levels parse and filter") {
  level l = level::info;
  CHECK(parse_level("debug", l));
  CHECK(l == level::debug);
  CHECK_FALSE(parse_level("loud", l));
  const auto saved = current_level();
  set_level(level::warn);
  CHECK_FALSE(enabled(level::info));
  CHECK(enabled(level::error));
  int evaluated = 0;
  MSOMNI_LOG(debug, "test") << ++evaluated;  // filtered records do not evaluate arguments
  CHECK(evaluated == 0);
  set_level(saved);
}
