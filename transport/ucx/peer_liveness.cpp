// The liveness rule of ucx_node's peers (peer_liveness.hpp).
#include "ucx/peer_liveness.hpp"

#include <algorithm>

namespace msomni::transport {

int liveness_rule::idle_wait_ms() const {
  return static_cast<int>(std::max<int64_t>(1, keepalive_interval.count() / 2));
}

std::string liveness_rule::silent_reason() const {
  return "silent for " + std::to_string(silent_limit().count()) + " ms (missed keep-alives)";
}

std::string liveness_rule::hello_overdue_reason() const {
  return "no hello within " + std::to_string(hello_timeout.count()) + " ms";
}

liveness_due liveness_check(const liveness_rule& rule, const peer_liveness& peer, liveness_time now) {
  if (now - peer.last_heard > rule.silent_limit()) return liveness_due::silent;
  if (now - peer.last_sent >= rule.keepalive_interval) return liveness_due::keepalive;
  return liveness_due::nothing;
}

bool hello_overdue(const liveness_rule& rule, const peer_liveness& peer, liveness_time now) {
  return now - peer.created > rule.hello_timeout;
}

}  // namespace msomni::transport
