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

// rank -> orchestrator (sent as its "worker" actor): the process is up on `node`, reachable
// at `address`, and has loaded and verified the newest checkpoint (`has_checkpoint`,
// `checkpoint_step`) as its warm-up. Idempotent.
struct rank_ready {
  std::string name;
  std::string node;
  std::string address;
  int64_t pid = 0;
  bool has_checkpoint = false;
  uint64_t checkpoint_step = 0;
  bool operator==(const rank_ready&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_ready& x) {
  return f(caf::meta::type_name("rank_ready"), x.name, x.node, x.address, x.pid, x.has_checkpoint,
           x.checkpoint_step);
}

// How the members of a new membership get their training state.
enum class state_source : uint8_t {
  carry_on = 0,    // keep it; new members receive it by broadcast from members[0]
  checkpoint = 1,  // everyone loads the newest verified checkpoint (rollback), or starts fresh
};
// orchestrator -> ranks: the membership of `epoch`, in ring order (rank = position). Current
// members switch to it at the first optimizer-step boundary after members[0] of the current
// epoch has seen it (it announces the epoch inside the step's statistics all-reduce, so all
// agree on the step); ranks not named leave there. With `checkpoint_first` the old members
// save and commit a checkpoint at that boundary before anyone leaves. grad_accum keeps the
// global batch fixed. Idempotent per epoch; an older epoch is ignored.
struct join_world {
  uint64_t epoch = 0;
  std::vector<std::string> members;
  std::vector<std::string> addresses;
  int64_t grad_accum = 1;
  uint8_t source = 0;  // state_source
  bool checkpoint_first = false;
  std::string reason;
  bool operator==(const join_world&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_world& x) {
  return f(caf::meta::type_name("join_world"), x.epoch, x.members, x.addresses, x.grad_accum, x.source,
           x.checkpoint_first, x.reason);
}

// rank -> orchestrator: its communicator of `epoch` failed at `step` (a peer died or went
// silent); it holds still and waits for a newer join_world.
struct rank_stalled {
  std::string name;
  uint64_t epoch = 0;
  uint64_t step = 0;
  std::string reason;
  bool operator==(const rank_stalled&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_stalled& x) {
  return f(caf::meta::type_name("rank_stalled"), x.name, x.epoch, x.step, x.reason);
}

// rank -> orchestrator (acknowledged with true, then the process exits 1): it cannot go on, and
// `reason` is its own error text, e.g. a data source that yields only bad samples. The
// orchestrator recovers as for a lost rank unless a replacement repeats a reason word for
// word (then the job ends with it). Idempotent: a rank already down is not counted again.
struct rank_failed {
  std::string name;
  uint64_t epoch = 0;
  uint64_t step = 0;
  std::string reason;
  bool operator==(const rank_failed&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_failed& x) {
  return f(caf::meta::type_name("rank_failed"), x.name, x.epoch, x.step, x.reason);
}

// rank -> orchestrator: leaving cleanly after `final_step` ("decommissioned", "finished",
// "stopped"), with the parameter checksum for comparisons.
struct rank_left {
  std::string name;
  uint64_t epoch = 0;
  uint64_t final_step = 0;
  std::string reason;
  uint64_t checksum = 0;
  bool operator==(const rank_left&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_left& x) {
  return f(caf::meta::type_name("rank_left"), x.name, x.epoch, x.final_step, x.reason, x.checksum);
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

// node agent -> orchestrator (sent as its "agent" actor): a node offering `slots` rank
// processes, with its place in the network for topology-aware placement.
struct agent_hello {
  std::string node;
  std::string rack;
  std::string switch_name;
  int64_t slots = 0;
  int64_t pid = 0;
  bool operator==(const agent_hello&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_hello& x) {
  return f(caf::meta::type_name("agent_hello"), x.node, x.rack, x.switch_name, x.slots, x.pid);
}

// orchestrator -> agent: start rank process `name` (msomni-rank with `args`).
struct spawn_rank {
  std::string name;
  std::vector<std::string> args;
  bool operator==(const spawn_rank&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, spawn_rank& x) {
  return f(caf::meta::type_name("spawn_rank"), x.name, x.args);
}

// orchestrator -> agent: kill rank process `name` (it died, went silent or overran its grace period).
struct stop_rank {
  std::string name;
  std::string reason;
  bool operator==(const stop_rank&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_rank& x) {
  return f(caf::meta::type_name("stop_rank"), x.name, x.reason);
}

// agent -> orchestrator: rank process `name` ended (exit code, or -signal).
struct rank_exited {
  std::string name;
  std::string node;
  int64_t status = 0;
  std::string log_tail;
  bool operator==(const rank_exited&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_exited& x) {
  return f(caf::meta::type_name("rank_exited"), x.name, x.node, x.status, x.log_tail);
}

// msomni control CLI -> orchestrator. `verb`: status | scale-down | scale-up | stop. Refused
// unless `token` is the run's token (control.json, mode 0600).
struct control_request {
  std::string token;
  std::string verb;
  int64_t replicas = 0;
  double grace_period_s = 0;  // 0 = elasticity.grace_period_s
  std::string requested_by;
  bool operator==(const control_request&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_request& x) {
  return f(caf::meta::type_name("control_request"), x.token, x.verb, x.replicas, x.grace_period_s,
           x.requested_by);
}

// orchestrator -> CLI: accepted or refused with why; `text` for people, `json` for scripts.
struct control_reply {
  bool ok = false;
  std::string text;
  std::string json;
  bool operator==(const control_reply&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_reply& x) {
  return f(caf::meta::type_name("control_reply"), x.ok, x.text, x.json);
}

}  // namespace msomni::msg
