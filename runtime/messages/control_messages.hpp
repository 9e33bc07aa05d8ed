// Control-plane messages between the orchestrator, node agents and rank workers.
// Every command carries the membership `epoch` it was issued in, so a stale or repeated
// one is recognised and ignored by its receiver.
// Plain structs, no CAF: pure cores include this header; what CAF needs to carry them
// (their inspect overloads) is in control_messages_inspect.hpp, which the catalog includes.
#pragma once

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
  state_source source = state_source::carry_on;
  bool checkpoint_first = false;
  std::string reason;
  bool operator==(const join_world&) const = default;
};

// rank -> orchestrator: its communicator of `epoch` failed at `step` (a peer died or went
// silent); it holds still and waits for a newer join_world.
struct rank_stalled {
  std::string name;
  uint64_t epoch = 0;
  uint64_t step = 0;
  std::string reason;
  bool operator==(const rank_stalled&) const = default;
};

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

// rank -> a control process that took over the job ([control] store): a rank of the previous
// leader that kept training while no leader existed asks to be adopted. `epoch`, `members` and
// `rank` are its running membership; `training` is true while it runs at that epoch with no
// change under way (training, or done with the last step and waiting to report it), false
// while it waits for a plan (stalled or at a barrier), which a new leader cannot adopt.
// Answered with rejoin_answer.
struct rank_rejoin {
  std::string name;
  std::string node;
  std::string address;  // its UCX listener, as rank_ready gives it
  int64_t pid = 0;
  uint64_t epoch = 0;
  std::vector<std::string> members;
  uint32_t rank = 0;
  uint64_t steps_done = 0;
  bool training = false;
  bool operator==(const rank_rejoin&) const = default;
};

// control -> rank (to its "worker"): whether the new leader adopted it. Adopted: it reports
// to this leader from now on and sends again the step records after `recorded_step` (the last
// step the job's metrics hold); refused: it leaves, saying `reason`.
struct rejoin_answer {
  bool adopted = false;
  uint64_t recorded_step = 0;
  std::string reason;
  bool operator==(const rejoin_answer&) const = default;
};

// rank -> orchestrator: leaving cleanly after `final_step` ("decommissioned", "finished",
// "stopped"), with the parameter checksum for comparisons. `failed`: the rank cannot go on
// and `reason` says why (every rank reached the same verdict after the same step, e.g. its
// checkpoints kept failing); the elastic core ends the job with it.
struct rank_left {
  std::string name;
  uint64_t epoch = 0;
  uint64_t final_step = 0;
  std::string reason;
  uint64_t checksum = 0;
  bool failed = false;
  bool operator==(const rank_left&) const = default;
};

// control CLI -> orchestrator: scale to `target_replicas`. Idempotent per request_id.
struct scale_request {
  uint64_t request_id = 0;
  uint32_t target_replicas = 0;
  double grace_period_s = 0;
  std::string requested_by;
  bool operator==(const scale_request&) const = default;
};

struct scale_reply {
  uint64_t request_id = 0;
  bool accepted = false;
  std::string reason;
  bool operator==(const scale_reply&) const = default;
};

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

// node agent -> orchestrator: the cluster's engine signalled the agent's processes (Slurm sends
// SIGTERM to every process of a job's steps on preemption, on `scancel --signal=TERM` and as a
// time limit's warning). The agent does not stop for it; the orchestrator takes `signal` as if
// the control process had received it: SIGTERM a preemption, SIGINT a stop, each with a final
// checkpoint at the next barrier. Idempotent: only the first stop counts.
struct agent_signalled {
  std::string node;
  int32_t signal = 0;
  std::string source;  // who sent it, in words ("slurm")
  bool operator==(const agent_signalled&) const = default;
};

// orchestrator -> agent: start rank process `name` (msomni-rank with `args`).
struct spawn_rank {
  std::string name;
  std::vector<std::string> args;
  bool operator==(const spawn_rank&) const = default;
};

// orchestrator -> agent: kill rank process `name` (it died, went silent or overran its grace period).
struct stop_rank {
  std::string name;
  std::string reason;
  bool operator==(const stop_rank&) const = default;
};

// orchestrator -> agent (a request; answered with node_check_report): run the job's
// pre-flight checks on the agent's node before it gets any rank. The config travels as its
// text and overrides, so a node checks the same job whether or not it has the file.
struct node_check_request {
  std::string level;           // quick | full
  std::string config_name;     // the file it came from (reports and errors name it)
  std::string config_text;
  std::vector<std::string> overrides;  // KEY=VALUE, as msomni-run's --set
  std::string checkpoint_dir;  // the run's checkpoint root, as the ranks will write it
  bool operator==(const node_check_request&) const = default;
};

// agent -> orchestrator: one node's report (the JSON object docs/health_check.md describes)
// and where its pair probe listens for node_pair_probe ("" when it could not start one).
struct node_check_report {
  std::string node;
  std::string report_json;
  std::string probe_address;
  bool operator==(const node_check_report&) const = default;
};

// orchestrator -> both agents of a pair (a request; answered with node_pair_result): a timed
// all-reduce of `elements` floats between the two nodes, `rounds` times; `dial` is the end
// that connects to the other's probe address.
struct node_pair_probe {
  uint64_t pair = 0;
  std::string peer;
  std::string peer_address;
  bool dial = false;
  int64_t elements = 0;
  int64_t rounds = 0;
  bool operator==(const node_pair_probe&) const = default;
};

struct node_pair_result {
  uint64_t pair = 0;
  std::string node;
  std::string peer;
  double median_ms = 0;  // the median round
  std::string error;     // "" when every round gave the exact sum
  bool operator==(const node_pair_result&) const = default;
};

// agent -> orchestrator: rank process `name` ended (exit code, or -signal).
struct rank_exited {
  std::string name;
  std::string node;
  int64_t status = 0;
  std::string log_tail;
  bool operator==(const rank_exited&) const = default;
};

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

// orchestrator -> CLI: accepted or refused with why; `text` for people, `json` for scripts.
struct control_reply {
  bool ok = false;
  std::string text;
  std::string json;
  bool operator==(const control_reply&) const = default;
};

}  // namespace msomni::msg
