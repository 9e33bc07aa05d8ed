// rank_protocol (see rank_protocol.hpp).
#include "rank_protocol.hpp"

#include <algorithm>
#include <utility>

namespace msomni::rank_worker {

namespace {

std::string whole_seconds(nanos d) { return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()); }

}  // namespace

nanos member_wait_for_heartbeat(double interval_s, int64_t misses) {
  const double seconds = std::max(1.0, interval_s * double(std::max<int64_t>(misses, 1)));
  return std::chrono::duration_cast<nanos>(std::chrono::duration<double>(seconds));
}

rank_protocol::rank_protocol(rank_protocol_settings s) : s_(std::move(s)) {}

rank_command rank_protocol::on_ready_sent(time_point now) {
  if (phase_ != rank_phase::warming_up) return fail("rank_ready was reported twice", false);
  wait_length_ = s_.first_plan_wait;
  return wait_for(1, now + s_.first_plan_wait);
}

rank_command rank_protocol::wait_for(uint64_t at_least, time_point until) {
  phase_ = rank_phase::awaiting_plan;
  waiting_ = {at_least, until};
  return waiting_;
}

std::optional<rank_command> rank_protocol::on_plan(const msg::join_world& plan, time_point) {
  if (phase_ == rank_phase::awaiting_plan && plan.epoch >= waiting_.at_least_epoch) return take(plan);
  if (phase_ == rank_phase::awaiting_announced && plan.epoch == announced_.epoch) {
    phase_ = rank_phase::at_barrier;
    barrier_plan_ = plan;
    return barrier_save{plan, rank_ == 0, plan.checkpoint_first, steps_done_ == s_.total_steps};
  }
  return std::nullopt;
}

rank_command rank_protocol::take(const msg::join_world& plan) {
  const auto me = std::find(plan.members.begin(), plan.members.end(), s_.name);
  if (me == plan.members.end()) {
    phase_ = rank_phase::done;
    return leave_job{plan.members.empty() ? "stopped" : "decommissioned", epoch_};
  }
  phase_ = rank_phase::joining;
  epoch_ = plan.epoch;  // a stall from here on is reported against this plan
  rank_ = static_cast<uint32_t>(me - plan.members.begin());
  const auto source = plan.source == msg::state_source::checkpoint ? state_from::checkpoint
                                                                                        : state_from::live_state;
  return join_as{plan, rank_, static_cast<uint32_t>(plan.members.size()), source};
}

rank_command rank_protocol::on_deadline(time_point now) {
  if (phase_ == rank_phase::awaiting_plan) {
    if (now < waiting_.until) return waiting_;
    return fail("no membership plan of epoch >= " + std::to_string(waiting_.at_least_epoch) + " within " +
                    whole_seconds(wait_length_) + " s",
                false);
  }
  if (phase_ == rank_phase::awaiting_announced) {
    if (now < announced_.until) return announced_;
    return fail("epoch " + std::to_string(announced_.epoch) + " was announced but never arrived", false);
  }
  return fail("a deadline came while no plan was awaited", false);
}

rank_command rank_protocol::on_joined(uint64_t steps_done) {
  if (phase_ != rank_phase::joining) return fail("joined while not joining", false);
  steps_done_ = steps_done;  // at the last step already when the checkpoint it loaded was
  return after_steps();
}

rank_command rank_protocol::after_steps() {
  if (steps_done_ >= s_.total_steps) {
    phase_ = rank_phase::finishing;
    return final_save{};
  }
  phase_ = rank_phase::training;
  return run_step{};
}

rank_command rank_protocol::on_step_done(uint64_t steps_done, uint64_t announced_epoch, time_point now) {
  if (phase_ != rank_phase::training) return fail("a step ended while not training", false);
  steps_done_ = steps_done;
  if (announced_epoch > epoch_) {
    phase_ = rank_phase::awaiting_announced;
    announced_ = {announced_epoch, now + s_.announced_plan_wait};
    return announced_;
  }
  phase_ = rank_phase::after_step;
  return after_step{rank_ == 0, steps_done_ == s_.total_steps};
}

rank_command rank_protocol::on_after_step_done() {
  if (phase_ != rank_phase::after_step) return fail("a checkpoint call ended outside a step", false);
  return after_steps();
}

rank_command rank_protocol::on_final_saved() {
  if (phase_ != rank_phase::finishing) return fail("a final checkpoint ended before the last step", false);
  phase_ = rank_phase::done;
  return leave_job{"finished", epoch_};
}

rank_command rank_protocol::on_barrier_saved() {
  if (phase_ != rank_phase::at_barrier) return fail("a barrier save ended outside a barrier", false);
  return take(barrier_plan_);
}

rank_command rank_protocol::on_collective_error(uint64_t steps_done, const std::string& what, time_point now) {
  if (phase_ == rank_phase::done) return fail(what, false);
  // While waiting no collective runs: a late error of the old epoch changes nothing.
  if (phase_ == rank_phase::awaiting_plan) return waiting_;
  steps_done_ = steps_done;
  wait_length_ = s_.stalled_plan_wait;
  const msg::rank_stalled stall{s_.name, epoch_, steps_done, what};
  const auto next = wait_for(epoch_ + 1, now + s_.stalled_plan_wait);
  return report_stall{stall, std::get<await_plan>(next)};
}

rank_command rank_protocol::on_checkpoint_give_up(const std::string& why) { return fail(why, true); }

rank_command rank_protocol::on_control_lost() { return fail("the control process is gone", false); }

rank_command rank_protocol::fail(std::string why, bool as_left) {
  phase_ = rank_phase::done;
  return fail_job{std::move(why), epoch_, as_left};
}

uint64_t rank_protocol::epoch_to_announce(uint64_t newest_held) const {
  return rank_ == 0 && newest_held > epoch_ ? newest_held : 0;
}

}  // namespace msomni::rank_worker
