// The orchestrator's policy: membership, placement, and the elastic state machine of one
// job. Pure: inputs are events with the time they happened; outputs are actions the actor
// shell carries out (send a plan, spawn or stop a rank through its node agent, journal an
// event, finish). No clock, thread, socket or file of its own, so the same code runs live,
// in tests and in the simulator.
//
//   starting --all first ranks ready--> running
//   running --scale-down N--> shrinking: plan(first N, checkpoint_first) to the members;
//        leavers finish the running step, reach the barrier and leave --> running
//        grace period passes --> leavers stopped; a stalled survivor triggers a rollback
//   running --scale-up N--> growing: new ranks start, load+verify the latest checkpoint,
//        report ready --> plan(members + new, carry_on) --> first step at N --> running
//   a member dies / goes silent / stalls --> rollback: plan(survivors, checkpoint) at the
//        largest allowed world; then a replacement is started (same switch, then rack, first)
//        and joins like a scale-up, up to the target replica count
//   an agent is lost, or silent past agent_silence_limit (found on a tick) --> its ranks are
//        down together: one rollback for all of them
//   stop --> plan(nobody, checkpoint_first) --> all leave --> finished
#pragma once

#include "core/time_point.hpp"
#include "failure_history.hpp"
#include "messages/control_messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <utility>
#include <vector>

namespace msomni::orchestrator {

struct elastic_settings {
  uint64_t total_steps = 0;
  int64_t global_batch = 1;
  int64_t micro_batch = 1;
  int64_t replicas = 1;      // the target at start
  int64_t min_replicas = 1;
  int64_t max_replicas = 1;
  nanos grace_period{std::chrono::seconds(120)};
  nanos ready_timeout{std::chrono::seconds(120)};  // a starting rank must report ready by then
  int64_t max_recoveries = 3;
  // Recoveries earlier leaders of this job already spent ([control] store, a takeover): the
  // budget of max_recoveries is the job's, not one control process's.
  int64_t recoveries_spent = 0;
  // The last membership epoch earlier leaders of this job used (a takeover): this core's
  // first plan is the next one, so the job keeps one epoch history across leaders.
  uint64_t epochs_before = 0;
  bool resume = false;  // the first plan loads the newest checkpoint
  // An agent not heard from (hello or heartbeat) for longer is down, with its ranks
  // (elasticity.heartbeat_interval_s x heartbeat_misses).
  nanos agent_silence_limit{std::chrono::seconds(30)};
  // The node agent living in the control process (single-node default), if any: a stall of
  // the whole machine delays its heartbeats too, and its death is seen as an actor's down
  // anyway, so silence never declares it down.
  std::string in_process_agent;
  // The agents the job expects (its configured or allocated nodes; 0: none in particular). The
  // first ranks are placed once all of them joined, or `agent_gather` after the first did,
  // so that placement sees every node (and its rack and switch), not the first to answer.
  int64_t expected_agents = 0;
  nanos agent_gather{std::chrono::seconds(10)};
  // A takeover ([control] store): how long after the first agent joined the first placement
  // waits for the previous leader's ranks, which kept training, to rejoin (rank_rejoin). A
  // whole membership that rejoins training is adopted as it runs; otherwise, once the window
  // closes, the ranks that rejoined are told to leave and new ranks start from the newest
  // checkpoint. 0: nobody is adopted (a first leader, or no store).
  nanos adopt_window{0};
  // How long a member whose connection dropped, while its agent reported no exit, keeps its
  // place: its process may live on (this control process or the rank stood still, the link
  // blinked) and reconnect, and is then adopted again as it runs, with no rollback. 0: a lost
  // connection is a down rank at once.
  nanos reconnect_window{0};
  // New ranks are named from rank-<rank_ids_before> on, so that none takes the name of a rank
  // an earlier leader started (which may still be running until it is told to leave).
  uint64_t rank_ids_before = 0;
};

// A rank's name, "rank-N", and back: N, or nullopt for any other name.
std::string rank_name(uint64_t id);
std::optional<uint64_t> rank_id_of(const std::string& name);

enum class member_state { starting, ready, active, leaving, left, dead };
const char* to_string(member_state s);

struct member_info {
  std::string name;
  std::string node;
  std::string address;
  int64_t pid = 0;
  member_state state = member_state::starting;
  time_point since{};
  bool replacement = false;  // started after an earlier rank went down (failure_history.hpp)
  uint64_t member_since = 0;  // the epoch of the first plan naming it
  uint64_t departed_step = 0;  // the job's step when it left or went down
  // Its connection dropped at this time and it may still reconnect (reconnect_window), why.
  std::optional<time_point> unreachable_since;
  std::string unreachable_why;
};

struct agent_info {
  std::string node;
  std::string rack;
  std::string switch_name;
  int64_t slots = 0;
  bool alive = true;
};

// Actions for the shell.
struct send_plan {
  std::vector<std::string> to;  // rank names
  msg::join_world plan;
};
struct spawn_on_agent {
  std::string node;
  std::string name;
};
struct stop_on_agent {
  std::string node;
  std::string name;
  std::string reason;
};
// rank and node: the rank and node the event is about, where there is one (events.jsonl
// carries them as fields).
struct journal_event {
  std::string kind;
  std::string detail;
  std::string rank = {};
  std::string node = {};
  std::vector<std::pair<std::string, int64_t>> numbers = {};  // further fields of the event line
};
// stopped: the job ended because it was asked to stop (a final checkpoint, resumable), not
// because its last step was trained.
struct finish_job {
  bool ok = true;
  std::string reason;
  bool stopped = false;
};
// The answer to a rank_rejoin: adopted (it reports here from now on) or told to leave.
// in_place: a member of this control process's own membership that reconnected: its step
// records after what this process journaled come again (not after what an earlier leader did).
struct answer_rejoin {
  std::string name;
  bool adopted = false;
  std::string reason;
  bool in_place = false;
};
using action = std::variant<send_plan, spawn_on_agent, stop_on_agent, journal_event, finish_job, answer_rejoin>;

// What `msomni status` shows: the core's view of the job, formatted by the shell (as JSON in
// orchestrator_json.hpp, as text by status_text).
struct rank_status {
  std::string name;
  std::string node;
  int64_t pid = 0;
  member_state state = member_state::starting;
  uint64_t step = 0;  // the job's last step for an active rank, the step it left at for a departed one
};
struct job_status {
  std::string phase;
  uint64_t epoch = 0;
  uint64_t step = 0;
  uint64_t total_steps = 0;
  int64_t world = 0;
  int64_t target = 0;
  int64_t grad_accum = 0;  // 0 when the world does not divide the global batch
  std::vector<rank_status> ranks;   // by name: every member that has not left or died
  std::vector<rank_status> departed;  // by name: members that left or died (the history)
  std::vector<agent_info> agents;   // by node
};
// "job running: step 5/100, 2 replicas (target 2), epoch 1", then sections: ranks (with
// their step), agents, and the departed ranks' history.
std::string status_text(const job_status& s);

struct control_outcome {
  bool ok = false;
  std::string text;
  std::vector<action> actions;
};

class elastic_core {
 public:
  explicit elastic_core(elastic_settings s);

  // -- agents and placement (elastic_agents.cpp) ------------------------------------------
  // A node agent joined (or rejoined; heard from at `now`). Starts the first ranks once
  // enough slots exist.
  std::vector<action> on_agent(const agent_info& a, time_point now);
  // A heartbeat of the agent on `node` (idempotent; an agent already declared down stays
  // down until it joins again). on_tick declares down an agent silent for too long.
  void on_heartbeat(const std::string& node, time_point now);
  // Every rank of the node is lost with it: one recovery for all of them.
  std::vector<action> on_agent_down(const std::string& node, const std::string& why, time_point now);

  // -- phases: start, joins, steps, the end (elastic_phases.cpp) ---------------------------
  std::vector<action> on_rank_ready(const msg::rank_ready& r, time_point now);
  // A step record of rank 0 (the shell forwards the ones it journals).
  std::vector<action> on_step(uint64_t step, uint32_t world, time_point now);
  // A rank left. One that left `failed` cannot go on (every rank reached the same verdict
  // after the same step): the job ends with its reason, the other ranks are stopped.
  std::vector<action> on_rank_left(const msg::rank_left& r, time_point now);

  // -- adoption after a takeover (elastic_adoption.cpp) ------------------------------------
  // A rank of the previous leader asks to be adopted (see adopt_window). Once every member of
  // its membership asked, at the same epoch and all training, they are adopted: the job runs
  // on at that epoch with no plan sent and no rank restarted.
  std::vector<action> on_rank_rejoin(const msg::rank_rejoin& r, time_point now);
  bool adopted() const { return adopted_; }

  // -- reconnects and this process's own pauses (elastic_reconnect.cpp) --------------------
  // The connection to `name` dropped while its agent reported no exit: it keeps its place for
  // reconnect_window (on_tick declares it down after), or is down at once without a window.
  std::vector<action> on_rank_unreachable(const std::string& name, const std::string& why, time_point now);
  // This control process stood still for `paused` (stopped, or starved of the CPU): the
  // silence of its agents and ranks in that time is its own, so every silence and timeout
  // clock moves on by it, and the pause is journaled.
  std::vector<action> on_own_pause(nanos paused, time_point now);

  // -- recovery: losses, rollbacks, replacements (elastic_recovery.cpp) --------------------
  std::vector<action> on_rank_stalled(const msg::rank_stalled& r, time_point now);
  // The process died, went silent, or exited without saying goodbye.
  std::vector<action> on_rank_down(const std::string& name, const std::string& why, time_point now);
  // The rank said why it cannot go on: recovered from like a lost rank, unless a replacement
  // repeats an earlier rank's reason word for word (then the job ends with it).
  std::vector<action> on_rank_failed(const msg::rank_failed& r, time_point now);
  // Training went non-finite on every rank (training_health asked for it): the members roll
  // back to the last checkpoint at the current world size, like a recovery. Ignored outside
  // the running phase (an elastic change in flight plans from a checkpoint anyway).
  std::vector<action> on_training_diverged(const std::string& why, time_point now);
  // Ends the job as failed with `why`: every rank is stopped.
  std::vector<action> fail(const std::string& why);

  // -- time alone: agent silence, grace periods, ready timeouts (elastic_core.cpp) ----------
  std::vector<action> on_tick(time_point now);

  // -- control verbs (elastic_control.cpp; the shell checks the token first) ---------------
  control_outcome scale_to(int64_t replicas, nanos grace_period, time_point now);
  // The CLI verbs: like scale_to, but refused when they would not shrink (grow) the job.
  control_outcome scale_down(int64_t replicas, nanos grace_period, time_point now);
  control_outcome scale_up(int64_t replicas, time_point now);
  // While a change is under way (start, recovery, resize) the stop is queued (journaled
  // stop_queued) and goes out once that change has landed.
  control_outcome stop(time_point now);
  bool stop_queued() const { return stop_queued_; }

  // -- status (elastic_status.cpp) ---------------------------------------------------------
  // Plain data for `msomni status`.
  job_status status() const;

  uint64_t epoch() const { return epoch_; }
  int64_t recoveries() const { return recoveries_; }  // recoveries from lost members so far
  uint64_t last_step() const { return last_step_; }
  int64_t world() const;
  // Whether one more replica could start now (running, below max_replicas, a free slot), and
  // whether one could leave (above min_replicas).
  bool can_grow() const;
  bool can_shrink() const;
  bool finished() const { return finished_; }
  const std::map<std::string, member_info>& members() const { return members_; }
  const std::map<std::string, agent_info>& agents() const { return agents_; }
  // Nodes whose agent is up and once held a rank but holds none now, while the job runs with
  // no change under way (after a scale-down emptied them): what cluster.release_idle_nodes
  // gives back to the cluster's engine. The in-process agent's node is never one.
  std::vector<std::string> idle_nodes() const;
  // `node` was given back: no rank is placed there again and its agent's end is no failure.
  std::vector<action> on_agent_released(const std::string& node);
  // grad_accum for `world` replicas, or nullopt when the global batch does not divide.
  std::optional<int64_t> grad_accum_for(int64_t world) const;

 private:
  enum class phase { starting, running, shrinking, growing, recovering, stopping, done };
  static const char* to_string(phase p);  // elastic_status.cpp

  // elastic_core.cpp: shared by every phase.
  std::vector<std::string> current() const;  // active members, in ring order
  int64_t largest_world_at_most(int64_t n) const;
  send_plan make_plan(std::vector<std::string> members, msg::state_source source, bool checkpoint_first,
                      std::vector<std::string> also_to, std::string reason);
  // elastic_agents.cpp
  std::vector<action> spawn(int64_t count, const std::string& near_node, time_point now);
  std::optional<std::string> place(const std::string& near_node) const;
  int64_t free_slots() const;
  int64_t free_slots_on(const agent_info& a) const;
  std::vector<action> declare_silent_agents_down(time_point now);
  // Several members lost in one incident: all marked down, then one recovery.
  std::vector<action> down_together(const std::vector<std::pair<std::string, std::string>>& lost, time_point now);
  std::vector<action> maybe_place_first(time_point now);
  // elastic_phases.cpp
  std::vector<action> maybe_start();
  std::vector<action> maybe_join_new();
  std::vector<action> top_up(time_point now);
  std::vector<action> maybe_finish();
  // elastic_recovery.cpp
  // by value: callers pass rollback_pending_; same_incident: continues the rollback plan that is out
  std::vector<action> rollback(std::string why, time_point now, bool same_incident = false);
  std::vector<action> recover_from_loss(const std::string& node, const std::string& why, time_point now);
  std::string cannot_start_reason(const std::string& name, const std::string& why) const;

  elastic_settings s_;
  phase phase_ = phase::starting;
  std::map<std::string, member_info> members_;
  std::map<std::string, agent_info> agents_;
  std::map<std::string, time_point> agent_heard_;  // node -> its last hello or heartbeat
  std::optional<time_point> first_agent_at_;       // when the first agent joined
  std::vector<std::string> ring_;     // members of the current epoch, in order
  std::vector<std::string> joining_;  // started for a scale-up or as replacements
  uint64_t epoch_ = 0;
  uint64_t last_step_ = 0;
  uint64_t next_rank_id_ = 0;
  int64_t target_ = 0;
  int64_t recoveries_ = 0;
  uint64_t downs_ = 0;            // ranks declared down so far; a rank started after one is a replacement
  failure_history failures_;
  time_point deadline_{};        // grace period of a scale-down
  time_point change_started_{};  // for the pause reported when a change completes
  uint64_t plan_epoch_ = 0;      // the epoch whose first step ends the change
  uint64_t rollback_epoch_ = 0;  // the epoch of the last rollback plan
  bool awaiting_join_ = false;   // a join plan is out; done at its first step
  std::optional<uint64_t> finished_epoch_;  // the epoch of the first rank that completed the last step
  // While a node's ranks are marked down together, the recovery waits for the last of them.
  bool deferring_losses_ = false;
  std::optional<std::pair<std::string, std::string>> deferred_loss_;  // (node, why)
  // A first rank lost without a replacement while deferring: can the job start? (name, why)
  std::optional<std::pair<std::string, std::string>> deferred_start_;
  // elastic_adoption.cpp
  std::vector<action> close_adoption(time_point now);  // the window passed: refuse, start anew
  // elastic_reconnect.cpp
  // A member of the current membership rejoined after its connection dropped: adopted in
  // place when it trains at the current epoch with nothing under way, else down.
  std::vector<action> readopt(const msg::rank_rejoin& r, time_point now);
  std::vector<action> declare_unreconnected_down(time_point now);
  std::vector<action> adopt(const msg::rank_rejoin& r, time_point now);
  std::map<std::string, msg::rank_rejoin> rejoined_;  // while the adoption window is open
  bool adoption_closed_ = false;
  bool adopted_ = false;
  bool placed_first_ = false;  // the first ranks were placed (or adopted)
  std::string rollback_pending_;  // why, while survivors wait for replacements to roll back with
  bool rollback_pending_continues_ = false;  // that wait continues a recovery already journaled
  // Replacements lost before they joined while that wait lasts: past max_recoveries the job
  // ends (a replacement that dies at start would otherwise be replaced for ever).
  int64_t replacements_lost_ = 0;
  // Members lost while one rollback plan after another is out, before any of them trains a
  // step: past max_replicas + max_recoveries the job ends instead of replanning for ever.
  int64_t incident_losses_ = 0;
  bool finished_ = false;
  // elastic_control.cpp
  control_outcome stop_now(time_point now);
  bool stop_queued_ = false;
};

}  // namespace msomni::orchestrator
