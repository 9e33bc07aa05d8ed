// The elastic protocol of one rank, as a pure state machine: the shell (a rank process, or the
// seeded simulation's ranks) reports what happened (a plan was taken, a step is done, a
// collective failed, a wait ran out) with the time, and carries out the command it gets back
// with the real ring, trainer, checkpointer and transport. No clock, thread, socket or file.
//
//   warming_up --ready sent--> awaiting_plan(epoch >= 1, until now + first_plan_wait)
//   awaiting_plan --plan--> not a member: leaving ("stopped" when the plan is empty,
//                           else "decommissioned")
//                           a member: joining (rank r of W, from the checkpoint or live state)
//   joining --joined at step s--> training (finishing when s is the last step)
//   training --step done, nothing newer announced--> after_step (rank 0 sends the record)
//            --> training, or finishing after the last step
//   finishing --the final checkpoint is committed--> leaving "finished"
//   training --step done, epoch E announced--> awaiting_announced(exactly E,
//            until now + announced_plan_wait) --plan E--> at_barrier (a verified save first
//            when E asks for it, else the usual save) --saved--> as for any plan above
//   joining | training | at_barrier | finishing --collective error--> report the stall, then
//            awaiting_plan(epoch > the current one, until now + stalled_plan_wait)
//   awaiting_* --the deadline passes--> failed (rank_failed with the reason)
//   any --checkpoints given up--> failed (rank_left marked failed); --control gone--> failed
//   (a rank that follows the job's leader, [control] store, tells the protocol only once no
//   new leader adopted it in time: until then it trains on, see managed_rank.hpp)
#pragma once

#include "core/time_point.hpp"
#include "messages/control_messages.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace msomni::rank_worker {

struct rank_protocol_settings {
  std::string name;          // this rank's name, as the plans list members
  uint64_t total_steps = 0;  // the run ends after this step
  // How long a rank waits: for its first plan (the others may still be starting), for the
  // plan announced at a barrier (already on its way), and for a rollback plan after a stall.
  nanos first_plan_wait = std::chrono::seconds(600);
  nanos announced_plan_wait = std::chrono::seconds(30);
  nanos stalled_plan_wait = std::chrono::seconds(600);
  // How long a rank joining a plan waits for each member to answer: every member of a plan
  // was ready at the control process when it was made, so one that does not answer within the
  // heartbeat's detection time (interval x misses) is down, and the wait ends sooner when a
  // newer plan supersedes this one.
  nanos member_wait = std::chrono::seconds(30);
};

// member_wait for a heartbeat of `interval_s` x `misses` (at least one second).
nanos member_wait_for_heartbeat(double interval_s, int64_t misses);

enum class rank_phase : uint8_t {
  warming_up, awaiting_plan, joining, training, after_step, awaiting_announced, at_barrier, finishing, done
};

enum class state_from : uint8_t { checkpoint, live_state };  // the newest checkpoint, or members[0]'s broadcast

// -- commands: what the shell does next -------------------------------------------------------
// Take the newest plan of epoch >= at_least_epoch (older ones are stale); on_deadline at `until`.
struct await_plan {
  uint64_t at_least_epoch = 0;
  time_point until;
  bool operator==(const await_plan&) const = default;
};
// Take exactly the plan of `epoch` (announced at a barrier); on_deadline at `until`.
struct await_announced_plan {
  uint64_t epoch = 0;
  time_point until;
  bool operator==(const await_announced_plan&) const = default;
};
// Connect to the members, build the ring of the plan's epoch as rank `rank` of `world`, take
// the state from `source`; then on_joined.
struct join_as {
  msg::join_world plan;
  uint32_t rank = 0, world = 0;
  state_from source = state_from::checkpoint;
  bool operator==(const join_as&) const = default;
};
// One optimizer step, announcing epoch_to_announce(newest plan held); then on_step_done.
struct run_step {
  bool operator==(const run_step&) const = default;
};
// The usual checkpoint call after a step (`last_step`: the run's last), the step record to
// the orchestrator when `send_record`; then on_after_step_done.
struct after_step {
  bool send_record = false, last_step = false;
  bool operator==(const after_step&) const = default;
};
// At the barrier of `plan`: the record when `send_record` (sent even when the plan rolls back:
// its epoch tells the orchestrator the step is discarded), then a verified save of this step
// when `verified_first`, else the usual save, finished; then on_barrier_saved.
struct barrier_save {
  msg::join_world plan;
  bool send_record = false, verified_first = false, last_step = false;
  bool operator==(const barrier_save&) const = default;
};
// Tell the orchestrator the collective failed, abandon a save in flight, then `then`.
struct report_stall {
  msg::rank_stalled stall;
  await_plan then;
  bool operator==(const report_stall&) const = default;
};
// The run is over: let the running checkpoint finish and commit; then on_final_saved.
struct final_save {
  bool operator==(const final_save&) const = default;
};
// rank_left{epoch, reason}, RESULT ok, exit 0.
struct leave_job {
  std::string reason;
  uint64_t epoch = 0;
  bool operator==(const leave_job&) const = default;
};
// The rank cannot go on. `as_left`: every rank gave up on checkpoints at the same step, so it
// leaves with rank_left marked failed, saying why (that ends the job); otherwise it reports rank_failed
// with `why` and exits 1.
struct fail_job {
  std::string why;
  uint64_t epoch = 0;
  bool as_left = false;
  bool operator==(const fail_job&) const = default;
};

using rank_command = std::variant<await_plan, await_announced_plan, join_as, run_step, after_step, barrier_save,
                                  final_save, report_stall, leave_job, fail_job>;

class rank_protocol {
 public:
  explicit rank_protocol(rank_protocol_settings s);

  // Warm-up is over and rank_ready went out: wait for the first plan.
  rank_command on_ready_sent(time_point now);
  // A plan the rank received. Nullopt when it is not the one awaited now (stale, or not a
  // wait): the caller keeps it for later or drops it.
  std::optional<rank_command> on_plan(const msg::join_world& plan, time_point now);
  // The wait's deadline came with no plan taken (before `until`, the same wait again).
  rank_command on_deadline(time_point now);
  // join_as is done: the ring of the epoch is up and the state is at `steps_done`.
  rank_command on_joined(uint64_t steps_done);
  // run_step is done: `steps_done` now, `announced_epoch` the epoch rank 0 announced in it.
  rank_command on_step_done(uint64_t steps_done, uint64_t announced_epoch, time_point now);
  rank_command on_after_step_done();
  rank_command on_barrier_saved();
  rank_command on_final_saved();
  // A collective of the running epoch failed (a peer died, went silent or was superseded).
  rank_command on_collective_error(uint64_t steps_done, const std::string& what, time_point now);
  rank_command on_checkpoint_give_up(const std::string& why);
  rank_command on_control_lost();

  // What rank 0 adds to a step's statistics: the newest plan it holds when newer than its
  // epoch, else 0 (the other ranks contribute 0).
  uint64_t epoch_to_announce(uint64_t newest_held) const;

  rank_phase phase() const noexcept { return phase_; }
  uint64_t epoch() const noexcept { return epoch_; }  // the plan applied last (0: none yet)
  uint32_t rank() const noexcept { return rank_; }
  const rank_protocol_settings& settings() const noexcept { return s_; }

 private:
  rank_command wait_for(uint64_t at_least, time_point until);
  rank_command take(const msg::join_world& plan);  // a plan taken: leave or join
  rank_command fail(std::string why, bool as_left);
  rank_command after_steps();  // training goes on, or the run is over

  rank_protocol_settings s_;
  rank_phase phase_ = rank_phase::warming_up;
  uint64_t epoch_ = 0;
  uint32_t rank_ = 0;
  uint64_t steps_done_ = 0;
  await_plan waiting_;              // while awaiting_plan
  nanos wait_length_{};             // how long that wait was given (for its failure's text)
  await_announced_plan announced_;  // while awaiting_announced
  msg::join_world barrier_plan_;    // while at_barrier
};

}  // namespace msomni::rank_worker
