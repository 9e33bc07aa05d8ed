// UCX's own log lines while a node closes. Closing flushes every endpoint that is still up;
// a peer that ended at the same moment without its goodbye reaching us (the other ranks at
// the end of a job) makes that flush fail with "Endpoint timeout", which UCX prints as an
// ERROR although nothing is lost: the node is leaving and every message it owed was sent
// before. While any node of the process closes (closing_scope alive), such peer-gone errors
// (endpoint timeout, connection reset, unreachable) are logged at debug through msomni's
// log and counted; every other UCX line, and all of them outside a close, go to UCX's own
// handler unchanged.
#pragma once

#include <cstdint>

namespace msomni::transport {

// Installs the filter into UCX's handler chain once per process (idempotent).
void install_ucx_log_filter();

// Marks a close in progress for the lifetime of the object.
class ucx_closing_scope {
 public:
  ucx_closing_scope();
  ~ucx_closing_scope();
  ucx_closing_scope(const ucx_closing_scope&) = delete;
  ucx_closing_scope& operator=(const ucx_closing_scope&) = delete;
};

// Peer-gone errors quieted by the filter in this process so far.
uint64_t ucx_close_errors_quieted();

}  // namespace msomni::transport
