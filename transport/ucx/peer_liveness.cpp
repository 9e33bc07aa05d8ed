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

bool own_pause(const liveness_rule& rule, liveness_time last_check, liveness_time now) {
  return last_check != liveness_time{} && now - last_check > rule.keepalive_interval;
}

liveness_time excuse_own_pause(const liveness_rule& rule, liveness_time last_heard, liveness_time last_check,
                               liveness_time now) {
  if (!own_pause(rule, last_check, now)) return last_heard;
  // Half an interval of the gap is the progress loop's own wait.
  const auto paused = (now - last_check) - rule.keepalive_interval / 2;
  return std::min(now, last_heard + paused);
}

bool supersedes_quiet(const liveness_rule& rule, const peer_liveness& first, liveness_time now) {
  return now - first.last_frame > rule.keepalive_interval;
}

}  // namespace msomni::transport
