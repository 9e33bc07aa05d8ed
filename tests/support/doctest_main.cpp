// The one doctest main shared by every test binary. A run that skipped a test case
// (MSOMNI_SKIP_TEST) and failed nothing ends with the skip marker and the reason.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support/test_skip.hpp"

#include <iostream>
#include <optional>

namespace {

std::optional<std::string>& skipped() {
  static std::optional<std::string> why;
  return why;
}

}  // namespace

void msomni::testing::record_skip(const std::string& why) {
  std::cerr << "SKIPPED: " << why << "\n";
  skipped() = why;
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  if (rc == 0 && skipped()) std::cout << "\n" << msomni::testing::skip_marker << ": " << *skipped() << std::endl;
  return rc;
}
