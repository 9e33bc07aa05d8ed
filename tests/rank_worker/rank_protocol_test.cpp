// rank_protocol: every transition of a rank's elastic protocol, timeouts included, with time
// as plain values.
#include "rank_protocol.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::rank_worker;
using std::chrono::seconds;

namespace {

const time_point t0 = time_point{} + seconds(100);

rank_protocol_settings settings(uint64_t total_steps = 10) {
  rank_protocol_settings s;
  s.name = "rank-1";
  s.total_steps = total_steps;
  return s;
}

msg::join_world plan(uint64_t epoch, std::vector<std::string> members, bool from_checkpoint = true,
                     bool checkpoint_first = false) {
  msg::join_world p;
  p.epoch = epoch;
  p.members = std::move(members);
  p.addresses.assign(p.members.size(), "ucx://x");
  p.grad_accum = 2;
  p.source = from_checkpoint ? msg::state_source::checkpoint : msg::state_source::carry_on;
  p.checkpoint_first = checkpoint_first;
  return p;
}

template <class T>
T as(const rank_command& c) {
  REQUIRE(std::holds_alternative<T>(c));
  return std::get<T>(c);
}

template <class T>
T as(const std::optional<rank_command>& c) {
  REQUIRE(c.has_value());
  return as<T>(*c);
}

// A rank that took `p` as a member and joined at `step`: now training.
rank_protocol training_in(const msg::join_world& p, uint64_t step = 0, uint64_t total_steps = 10) {
  rank_protocol r(settings(total_steps));
  r.on_ready_sent(t0);
  as<join_as>(r.on_plan(p, t0));
  as<run_step>(r.on_joined(step));
  return r;
}

}  // namespace

TEST_CASE("after rank_ready the rank waits for a plan of epoch 1 or newer, up to first_plan_wait") {
  rank_protocol r(settings());
  CHECK(r.phase() == rank_phase::warming_up);
  const auto w = as<await_plan>(r.on_ready_sent(t0));
  CHECK(w.at_least_epoch == 1);
  CHECK(w.until == t0 + seconds(600));
  CHECK(r.phase() == rank_phase::awaiting_plan);
}

TEST_CASE("the first plan's deadline: the same wait before it, a failure with the reason after it") {
  rank_protocol r(settings());
  r.on_ready_sent(t0);
  CHECK(as<await_plan>(r.on_deadline(t0 + seconds(599))) == await_plan{1, t0 + seconds(600)});
  const auto f = as<fail_job>(r.on_deadline(t0 + seconds(600)));
  CHECK(f.why == "no membership plan of epoch >= 1 within 600 s");
  CHECK_FALSE(f.as_left);  // reported as rank_failed
  CHECK(r.phase() == rank_phase::done);
}

TEST_CASE("a member joins as its position in the plan, from the checkpoint or from live state") {
  rank_protocol r(settings());
  r.on_ready_sent(t0);
  const auto p = plan(3, {"rank-0", "rank-1", "rank-2"});
  const auto j = as<join_as>(r.on_plan(p, t0));
  CHECK(j.rank == 1);
  CHECK(j.world == 3);
  CHECK(j.source == state_from::checkpoint);
  CHECK(j.plan == p);
  CHECK(r.epoch() == 3);
  CHECK(r.phase() == rank_phase::joining);

  rank_protocol live(settings());
  live.on_ready_sent(t0);
  CHECK(as<join_as>(live.on_plan(plan(2, {"rank-1", "rank-0"}, false), t0)).source == state_from::live_state);
  CHECK(live.rank() == 0);
}

TEST_CASE("a plan without the rank: it leaves, stopped when the plan is empty, else decommissioned") {
  rank_protocol stopped(settings());
  stopped.on_ready_sent(t0);
  const auto s = as<leave_job>(stopped.on_plan(plan(4, {}), t0));
  CHECK(s.reason == "stopped");
  CHECK(stopped.phase() == rank_phase::done);

  rank_protocol gone(settings());
  gone.on_ready_sent(t0);
  CHECK(as<leave_job>(gone.on_plan(plan(4, {"rank-0"}), t0)).reason == "decommissioned");
}

TEST_CASE("a plan older than the one awaited is not taken") {
  auto r = training_in(plan(2, {"rank-1"}));
  const auto stall = as<report_stall>(r.on_collective_error(4, "peer down", t0));
  CHECK(stall.then.at_least_epoch == 3);
  CHECK_FALSE(r.on_plan(plan(2, {"rank-1"}), t0).has_value());
  CHECK(r.phase() == rank_phase::awaiting_plan);
  CHECK(as<join_as>(r.on_plan(plan(5, {"rank-1"}), t0)).plan.epoch == 5);
}

TEST_CASE("joined at the last step: the rank leaves finished after the final checkpoint, without a step") {
  rank_protocol r(settings(10));
  r.on_ready_sent(t0);
  as<join_as>(r.on_plan(plan(1, {"rank-1"}), t0));
  as<final_save>(r.on_joined(10));
  CHECK(r.phase() == rank_phase::finishing);
  const auto l = as<leave_job>(r.on_final_saved());
  CHECK(l.reason == "finished");
  CHECK(l.epoch == 1);
  CHECK(r.phase() == rank_phase::done);
}

TEST_CASE("a collective error in the final checkpoint stalls the rank instead of leaving") {
  auto r = training_in(plan(3, {"rank-1", "rank-0"}), 9, 10);
  as<after_step>(r.on_step_done(10, 0, t0));
  as<final_save>(r.on_after_step_done());
  const auto s = as<report_stall>(r.on_collective_error(10, "member rank-0 is down", t0));
  CHECK(s.stall.epoch == 3);
  CHECK(s.then.at_least_epoch == 4);
}

TEST_CASE("training: each step is followed by the checkpoint call, rank 0 sends the record") {
  auto r0 = training_in(plan(1, {"rank-1", "rank-0"}));
  CHECK(as<after_step>(r0.on_step_done(1, 0, t0)) == after_step{true, false});
  CHECK(r0.phase() == rank_phase::after_step);
  as<run_step>(r0.on_after_step_done());
  CHECK(r0.phase() == rank_phase::training);

  auto r1 = training_in(plan(1, {"rank-0", "rank-1"}));
  CHECK(as<after_step>(r1.on_step_done(1, 0, t0)) == after_step{false, false});
}

TEST_CASE("the last step: the checkpoint call knows it, and the rank then leaves finished") {
  auto r = training_in(plan(1, {"rank-1"}), 8, 10);
  as<after_step>(r.on_step_done(9, 0, t0));
  as<run_step>(r.on_after_step_done());
  CHECK(as<after_step>(r.on_step_done(10, 0, t0)).last_step);
  as<final_save>(r.on_after_step_done());
  CHECK(as<leave_job>(r.on_final_saved()) == leave_job{"finished", 1});
}

TEST_CASE("rank 0 announces the newest plan it holds when newer than its epoch, others announce nothing") {
  auto r0 = training_in(plan(2, {"rank-1", "rank-0"}));
  CHECK(r0.epoch_to_announce(0) == 0);
  CHECK(r0.epoch_to_announce(2) == 0);
  CHECK(r0.epoch_to_announce(3) == 3);
  auto r1 = training_in(plan(2, {"rank-0", "rank-1"}));
  CHECK(r1.epoch_to_announce(3) == 0);
}

TEST_CASE("an announced epoch: the rank takes exactly that plan, within announced_plan_wait") {
  auto r = training_in(plan(2, {"rank-1", "rank-0"}));
  const auto w = as<await_announced_plan>(r.on_step_done(3, 4, t0));
  CHECK(w == await_announced_plan{4, t0 + seconds(30)});
  CHECK(r.phase() == rank_phase::awaiting_announced);
  CHECK_FALSE(r.on_plan(plan(5, {"rank-1"}), t0).has_value());  // not the announced one
  const auto p = plan(4, {"rank-1", "rank-0", "rank-2"}, false);
  const auto b = as<barrier_save>(r.on_plan(p, t0 + seconds(1)));
  CHECK(b.plan == p);
  CHECK(b.send_record);  // rank 0 of the old epoch
  CHECK_FALSE(b.verified_first);
  CHECK_FALSE(b.last_step);
  CHECK(r.phase() == rank_phase::at_barrier);
  const auto j = as<join_as>(r.on_barrier_saved());
  CHECK(j.rank == 0);
  CHECK(j.world == 3);
  CHECK(j.source == state_from::live_state);
  CHECK(r.epoch() == 4);
  as<run_step>(r.on_joined(3));
  CHECK(r.epoch_to_announce(4) == 0);  // announced already: the new epoch is running
}

TEST_CASE("a checkpoint_first plan at the barrier asks for a verified save, a leaver then leaves decommissioned") {
  auto r = training_in(plan(2, {"rank-0", "rank-1"}));
  as<await_announced_plan>(r.on_step_done(6, 3, t0));
  const auto b = as<barrier_save>(r.on_plan(plan(3, {"rank-0"}, false, true), t0));
  CHECK(b.verified_first);
  CHECK_FALSE(b.send_record);  // rank 1 sends no record
  const auto l = as<leave_job>(r.on_barrier_saved());
  CHECK(l.reason == "decommissioned");
  CHECK(l.epoch == 2);  // it leaves the epoch it trained in
}

TEST_CASE("a barrier at the last step says so to the save") {
  auto r = training_in(plan(2, {"rank-1"}), 9, 10);
  as<await_announced_plan>(r.on_step_done(10, 3, t0));
  CHECK(as<barrier_save>(r.on_plan(plan(3, {}), t0)).last_step);
  CHECK(as<leave_job>(r.on_barrier_saved()).reason == "stopped");
}

TEST_CASE("an announced plan that does not come in time fails the rank") {
  auto r = training_in(plan(2, {"rank-1"}));
  as<await_announced_plan>(r.on_step_done(3, 3, t0));
  CHECK(as<await_announced_plan>(r.on_deadline(t0 + seconds(29))).epoch == 3);
  const auto f = as<fail_job>(r.on_deadline(t0 + seconds(30)));
  CHECK(f.why == "epoch 3 was announced but never arrived");
  CHECK_FALSE(f.as_left);
}

TEST_CASE("a collective error while training: stall reported against the epoch, then a newer plan within stalled_plan_wait") {
  auto r = training_in(plan(2, {"rank-0", "rank-1"}), 4);
  const auto s = as<report_stall>(r.on_collective_error(5, "member rank-0 is down", t0));
  CHECK(s.stall == msg::rank_stalled{"rank-1", 2, 5, "member rank-0 is down"});
  CHECK(s.then == await_plan{3, t0 + seconds(600)});
  CHECK(r.phase() == rank_phase::awaiting_plan);
  const auto f = as<fail_job>(r.on_deadline(t0 + seconds(600)));
  CHECK(f.why == "no membership plan of epoch >= 3 within 600 s");
}

TEST_CASE("a collective error while joining or at a barrier stalls the same way") {
  rank_protocol j(settings());
  j.on_ready_sent(t0);
  as<join_as>(j.on_plan(plan(7, {"rank-1", "rank-9"}), t0));
  const auto s = as<report_stall>(j.on_collective_error(0, "member rank-9 never came up", t0));
  CHECK(s.stall.epoch == 7);  // against the plan it was applying
  CHECK(s.then.at_least_epoch == 8);

  auto b = training_in(plan(2, {"rank-1", "rank-0"}));
  as<await_announced_plan>(b.on_step_done(3, 3, t0));
  as<barrier_save>(b.on_plan(plan(3, {"rank-1"}, false, true), t0));
  CHECK(as<report_stall>(b.on_collective_error(3, "save failed", t0)).then.at_least_epoch == 3);
}

TEST_CASE("a late collective error while already waiting changes nothing") {
  auto r = training_in(plan(2, {"rank-1"}));
  const auto s = as<report_stall>(r.on_collective_error(1, "x", t0));
  CHECK(as<await_plan>(r.on_collective_error(1, "y", t0 + seconds(5))) == s.then);
}

TEST_CASE("checkpoints given up: the rank leaves as failed, the control process gone: it fails") {
  auto r = training_in(plan(2, {"rank-1"}));
  const auto f = as<fail_job>(r.on_checkpoint_give_up("5 saves in a row failed"));
  CHECK(f == fail_job{"5 saves in a row failed", 2, true});
  CHECK(r.phase() == rank_phase::done);

  rank_protocol w(settings());
  w.on_ready_sent(t0);
  const auto c = as<fail_job>(w.on_control_lost());
  CHECK(c.why == "the control process is gone");
  CHECK_FALSE(c.as_left);
}

TEST_CASE("events out of order are refused as failures, never silently taken") {
  rank_protocol r(settings());
  CHECK(std::holds_alternative<fail_job>(r.on_joined(0)));
  rank_protocol s(settings());
  s.on_ready_sent(t0);
  CHECK(std::holds_alternative<fail_job>(s.on_step_done(1, 0, t0)));
  rank_protocol t(settings());
  t.on_ready_sent(t0);
  CHECK(std::holds_alternative<fail_job>(t.on_ready_sent(t0)));
  auto u = training_in(plan(1, {"rank-1"}));
  CHECK(std::holds_alternative<fail_job>(u.on_final_saved()));
}

TEST_CASE("the waits come from the settings") {
  auto s = settings();
  s.first_plan_wait = seconds(5);
  s.announced_plan_wait = seconds(2);
  s.stalled_plan_wait = seconds(7);
  rank_protocol r(s);
  CHECK(as<await_plan>(r.on_ready_sent(t0)).until == t0 + seconds(5));
  as<join_as>(r.on_plan(plan(1, {"rank-1"}), t0));
  as<run_step>(r.on_joined(0));
  CHECK(as<await_announced_plan>(r.on_step_done(1, 2, t0)).until == t0 + seconds(2));
  as<barrier_save>(r.on_plan(plan(2, {"rank-1"}), t0));
  as<join_as>(r.on_barrier_saved());
  CHECK(as<report_stall>(r.on_collective_error(1, "x", t0)).then.until == t0 + seconds(7));
  CHECK(as<fail_job>(r.on_deadline(t0 + seconds(7))).why == "no membership plan of epoch >= 3 within 7 s");
}
