// Control-plane messages between the orchestrator, node agents and rank workers.
// Every command carries the membership `epoch` it was issued in, so a stale or repeated
// one is recognised and ignored by its receiver.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::msg {

// rank/agent -> orchestrator, every elasticity.heartbeat_interval_s. Idempotent.
struct heartbeat {
  std::string node;
  uint32_t rank = 0;
  uint64_t epoch = 0;
  uint64_t seq = 0;
  int64_t sent_at_ns = 0;
  bool operator==(const heartbeat&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, heartbeat& x) {
  return f(caf::meta::type_name("heartbeat"), x.node, x.rank, x.epoch, x.seq, x.sent_at_ns);
}

// new rank -> orchestrator: loaded and verified `checkpoint_step`, warmed up. Idempotent.
struct rank_ready {
  uint32_t rank = 0;
  uint64_t epoch = 0;
  uint64_t checkpoint_step = 0;
  bool operator==(const rank_ready&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_ready& x) {
  return f(caf::meta::type_name("rank_ready"), x.rank, x.epoch, x.checkpoint_step);
}

// orchestrator -> ranks: the membership from `barrier_step` on. Idempotent per epoch.
struct join_world {
  uint64_t epoch = 0;
  uint32_t world_size = 0;
  std::vector<uint32_t> ranks;
  uint64_t barrier_step = 0;
  bool operator==(const join_world&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_world& x) {
  return f(caf::meta::type_name("join_world"), x.epoch, x.world_size, x.ranks, x.barrier_step);
}

// orchestrator -> leaving ranks: stop taking batches, finish the step, leave by the deadline.
struct decommission {
  uint64_t epoch = 0;
  std::vector<uint32_t> ranks;
  int64_t deadline_ns = 0;
  std::string reason;
  bool operator==(const decommission&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decommission& x) {
  return f(caf::meta::type_name("decommission"), x.epoch, x.ranks, x.deadline_ns, x.reason);
}

// leaving rank -> orchestrator: reached the barrier at `final_step` and is exiting.
struct decommissioned {
  uint32_t rank = 0;
  uint64_t epoch = 0;
  uint64_t final_step = 0;
  bool operator==(const decommissioned&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decommissioned& x) {
  return f(caf::meta::type_name("decommissioned"), x.rank, x.epoch, x.final_step);
}

// transport/agent -> watchers: a peer process died or went silent.
struct peer_down {
  std::string node;
  uint32_t rank = 0;
  uint64_t epoch = 0;
  std::string reason;
  bool operator==(const peer_down&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_down& x) {
  return f(caf::meta::type_name("peer_down"), x.node, x.rank, x.epoch, x.reason);
}

// control CLI -> orchestrator: scale to `target_replicas`. Idempotent per request_id.
struct scale_request {
  uint64_t request_id = 0;
  uint32_t target_replicas = 0;
  double grace_period_s = 0;
  std::string requested_by;
  bool operator==(const scale_request&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scale_request& x) {
  return f(caf::meta::type_name("scale_request"), x.request_id, x.target_replicas,
           x.grace_period_s, x.requested_by);
}

struct scale_reply {
  uint64_t request_id = 0;
  bool accepted = false;
  std::string reason;
  bool operator==(const scale_reply&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scale_reply& x) {
  return f(caf::meta::type_name("scale_reply"), x.request_id, x.accepted, x.reason);
}

}  // namespace msomni::msg
