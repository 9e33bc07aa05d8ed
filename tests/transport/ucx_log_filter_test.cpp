// UCX's peer-gone errors are quieted only while a node closes; every other UCX error, and
// peer-gone ones outside a close, still reach UCX's own handler.
#include "ucx/ucx_log_filter.hpp"

#include <ucs/debug/log_def.h>

#include <doctest/doctest.h>

using namespace msomni::transport;

TEST_CASE("an endpoint timeout during a close is quieted and counted, other errors are not") {
  install_ucx_log_filter();
  install_ucx_log_filter();  // idempotent
  const auto before = ucx_close_errors_quieted();
  ucs_error("flush of ep %p failed: %s", static_cast<void*>(nullptr), "Endpoint timeout");  // not closing
  CHECK(ucx_close_errors_quieted() == before);
  {
    const ucx_closing_scope closing;
    ucs_error("flush of ep %p failed: %s", static_cast<void*>(nullptr), "Endpoint timeout");
    CHECK(ucx_close_errors_quieted() == before + 1);
    ucs_error("Connection reset by remote peer");
    CHECK(ucx_close_errors_quieted() == before + 2);
    ucs_error("%s", "out of memory registering a buffer");  // a real error: printed as UCX prints it
    CHECK(ucx_close_errors_quieted() == before + 2);
  }
  ucs_error("%s", "Endpoint timeout");
  CHECK(ucx_close_errors_quieted() == before + 2);
}
