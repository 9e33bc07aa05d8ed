// A test case that cannot run on this machine (no usable GPU) says why and returns through
// MSOMNI_SKIP_TEST. The shared main (doctest_main.cpp) then prints skip_marker, which ctest
// reports as Skipped (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt), and only when the
// run had no failure, so a failing test cannot pass itself off as skipped.
#pragma once

#include <string>

namespace msomni::testing {

inline constexpr const char* skip_marker = "MSOMNI-TEST-SKIPPED";

// Records why the running test case is skipped; the last one recorded is printed.
void record_skip(const std::string& why);

}  // namespace msomni::testing

#define MSOMNI_SKIP_TEST(why)                 \
  do {                                        \
    ::msomni::testing::record_skip(why);      \
    return;                                   \
  } while (0)
