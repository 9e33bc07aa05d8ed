// watch_transport (see transport_metrics.hpp).
#include "hub/transport_metrics.hpp"

#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

namespace msomni::transport {

namespace {

// A Prometheus counter that follows a cumulative atomic (prometheus-cpp counters only grow by
// increments, so each refresh adds what the atomic gained since the last).
struct followed {
  const std::atomic<uint64_t>* source;
  prometheus::Counter* counter;
  uint64_t seen = 0;
  void refresh() {
    const auto now = source->load(std::memory_order_relaxed);
    if (now > seen) counter->Increment(static_cast<double>(now - seen));
    seen = now;
  }
};

}  // namespace

metrics::metrics_registry::refresher_handle watch_transport(metrics::metrics_registry& r, transport_hub& hub,
                                                            const gateway& gw) {
  const auto& n = hub.node().counters();
  const auto& g = gw.counters();
  auto follow = std::make_shared<std::vector<followed>>();
  const auto add = [&](const std::atomic<uint64_t>& a, const char* family, metrics::labels l) {
    follow->push_back({&a, &r.counter(family, l)});
  };
  add(n.frames_sent, "msomni_transport_frames_total", {{"direction", "sent"}});
  add(n.frames_received, "msomni_transport_frames_total", {{"direction", "received"}});
  add(n.frames_dropped, "msomni_transport_frames_total", {{"direction", "dropped"}});
  add(n.bytes_sent, "msomni_transport_bytes_total", {{"direction", "sent"}});
  add(n.bytes_received, "msomni_transport_bytes_total", {{"direction", "received"}});
  add(n.sends_rejected, "msomni_transport_sends_rejected_total", {});
  add(n.peers_refused, "msomni_transport_peers_refused_total", {});
  add(n.peers_silent, "msomni_transport_peers_down_total", {{"cause", "silent"}});
  add(n.peers_superseded, "msomni_transport_peers_down_total", {{"cause", "superseded"}});
  add(n.own_pauses, "msomni_transport_own_pauses_total", {});
  add(g.forwarded, "msomni_gateway_messages_total", {{"outcome", "forwarded"}});
  add(g.delivered, "msomni_gateway_messages_total", {{"outcome", "delivered"}});
  add(g.dropped_malformed, "msomni_gateway_messages_total", {{"outcome", "dropped_malformed"}});
  add(g.dropped_unknown, "msomni_gateway_messages_total", {{"outcome", "dropped_unknown"}});
  add(g.dropped_unsendable, "msomni_gateway_messages_total", {{"outcome", "dropped_unsendable"}});
  add(g.requests_failed, "msomni_gateway_requests_total", {{"outcome", "failed_peer_down"}});
  add(g.requests_untracked, "msomni_gateway_requests_total", {{"outcome", "untracked"}});
  auto& other_down = r.counter("msomni_transport_peers_down_total", {{"cause", "other"}});
  auto& pending = r.gauge("msomni_gateway_requests_pending");
  auto& depth = r.gauge("msomni_transport_send_queue_depth");
  auto& depth_max = r.gauge("msomni_transport_send_queue_depth_max");
  auto other_seen = std::make_shared<uint64_t>(0);
  return r.add_refresher([follow, &n, &g, &other_down, &pending, &depth, &depth_max, other_seen] {
    pending.Set(static_cast<double>(g.requests_pending.load(std::memory_order_relaxed)));
    for (auto& f : *follow) f.refresh();
    const auto down = n.peers_down.load(std::memory_order_relaxed);
    const auto named = n.peers_silent.load(std::memory_order_relaxed) + n.peers_superseded.load(std::memory_order_relaxed);
    const auto other = down > named ? down - named : 0;
    if (other > *other_seen) other_down.Increment(static_cast<double>(other - *other_seen));
    *other_seen = std::max(*other_seen, other);
    depth.Set(static_cast<double>(n.queue_depth.load(std::memory_order_relaxed)));
    depth_max.Set(static_cast<double>(n.queue_depth_max.load(std::memory_order_relaxed)));
  });
}

}  // namespace msomni::transport
