// Carrying out rank_protocol's commands with the real inbox, trainer, checkpointer and
// transport, and the rank's log lines for them (STEP, CHECKPOINT, STALLED, RESULT); leaving
// and failing (see managed_rank_state.hpp).
#include "managed_rank_state.hpp"

#include "core/json_text.hpp"
#include "step_line.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace msomni::apps::rank_shell {

using namespace std::chrono_literals;

namespace {

// How often a wait for a plan looks whether the control process is still there.
constexpr auto control_check_interval = 500ms;

}  // namespace

// Carries out one command of the protocol and puts the next one in `command`; the exit code
// once the rank is done. A collective error or a checkpoint give-up propagates to run().
std::optional<int> managed_rank::carry_out(rank_worker::rank_command& command) {
  namespace rw = rank_worker;
  if (auto* w = std::get_if<rw::await_plan>(&command)) {
    if (auto p = inbox_.take(w->at_least_epoch, wait_slice(w->until)))
      if (auto next = protocol_.on_plan(*p, clock_.now())) return command = std::move(*next), std::nullopt;
    if (control_gone()) return command = protocol_.on_control_lost(), std::nullopt;
    command = protocol_.on_deadline(clock_.now());  // the same wait again before its deadline
  } else if (auto* a = std::get_if<rw::await_announced_plan>(&command)) {
    if (auto p = inbox_.take_exactly(a->epoch, remaining(a->until)))
      if (auto next = protocol_.on_plan(*p, clock_.now())) return command = std::move(*next), std::nullopt;
    command = protocol_.on_deadline(clock_.now());
  } else if (auto* j = std::get_if<rw::join_as>(&command)) {
    apply(*j);
    command = protocol_.on_joined(steps_done());
  } else if (std::holds_alternative<rw::run_step>(command)) {
    if (control_gone()) return command = protocol_.on_control_lost(), std::nullopt;
    auto& t = *tr_.trainer;
    probe_->step_started(identity_, t.steps_done() + 1);
    try {
      record_ = t.step(protocol_.epoch_to_announce(inbox_.newest_epoch()));
    } catch (...) {
      probe_->step_aborted();
      throw;
    }
    const auto peak = send_memory_sample();
    report_fit(t, peak);
    // Which samples were bad: each rank draws its own, so each says so itself.
    if (auto seen = t.take_bad_samples_seen(); !seen.empty())
      link_.send(msg::bad_samples_seen{identity_.rank, t.steps_done(), std::move(seen)});
    if (metrics_) {
      const auto c = link_.totals();
      metrics_->on_control_link(c.kept, c.dropped, c.overflowed, c.resent);
      metrics_->on_step(record_, t);
      metrics_->on_collective_shared_bytes(ring_ ? ring_->shared_bytes() : 0);
    }
    std::cout << step_line(step_fields(record_)) << std::endl;
    command = protocol_.on_step_done(t.steps_done(), t.last_announced(), clock_.now());
  } else if (auto* s = std::get_if<rw::after_step>(&command)) {
    // The record goes out after the checkpoint call, with the time the rank stood still in
    // it: the scheduler's predictor counts that as an idle phase of the job's GPUs.
    const auto checkpoint_from = clock_.now();
    checkpoints_->after_step(*tr_.trainer, *ring_, s->last_step);
    record_.checkpoint_ns = (clock_.now() - checkpoint_from).count();
    if (s->send_record) link_.send_record(record_);
    report_checkpoint();
    command = protocol_.on_after_step_done();
  } else if (auto* b = std::get_if<rw::barrier_save>(&command)) {
    if (b->send_record) link_.send_record(record_);
    if (b->verified_first) {
      const auto step = checkpoints_->save_verified(*tr_.trainer, *ring_);
      std::cout << "CHECKPOINT verified step " << step << " before epoch " << b->plan.epoch << std::endl;
    } else {
      checkpoints_->after_step(*tr_.trainer, *ring_, b->last_step);
      checkpoints_->finish(*ring_);
      report_checkpoint();
    }
    command = protocol_.on_barrier_saved();
  } else if (std::holds_alternative<rw::final_save>(command)) {
    checkpoints_->finish(*ring_);
    report_checkpoint();
    command = protocol_.on_final_saved();
  } else if (auto* st = std::get_if<rw::report_stall>(&command)) {
    std::cout << "STALLED epoch " << st->stall.epoch << " at step " << st->stall.step << ": " << st->stall.reason
              << std::endl;
    link_.send(st->stall);
    checkpoints_.reset();  // a save in flight is abandoned, never committed
    command = rw::rank_command{st->then};
  } else if (auto* l = std::get_if<rw::leave_job>(&command)) {
    return leave(*l);
  } else if (auto* f = std::get_if<rw::fail_job>(&command)) {
    if (f->as_left) return fail(*f);
    throw std::runtime_error(f->why);  // reported as rank_failed on the way out
  }
  return std::nullopt;
}

// How long to block on the inbox: until `until`, but never past the next look at the
// control process.
std::chrono::milliseconds managed_rank::wait_slice(time_point until) const {
  return std::min<std::chrono::milliseconds>(remaining(until), control_check_interval);
}

std::chrono::milliseconds managed_rank::remaining(time_point until) const {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - clock_.now());
  return std::max(left, std::chrono::milliseconds(0));
}

// One line per decided save in the rank's log: when it was committed and how long after
// the snapshot was handed to the writer.
void managed_rank::report_checkpoint() {
  const auto d = checkpoints_->take_decided();
  if (!d) return;
  nlohmann::ordered_json o;
  o["step"] = d->step;
  o["committed"] = d->committed;
  o["decided_after_step"] = d->decided_after_step;
  o["request_to_commit_ms"] = static_cast<double>(d->request_to_commit_ns) / 1e6;
  o["write_ms"] = static_cast<double>(d->write_ns) / 1e6;
  o["commit_ms"] = static_cast<double>(d->commit_ns) / 1e6;
  std::cout << "CHECKPOINT " << json_text(o) << (d->committed ? "" : " " + d->error) << std::endl;
}

// Every rank reached the same verdict after the same step (its checkpoints keep failing):
// the job cannot go on, so the rank leaves with the reason, which ends the job.
int managed_rank::fail(const rank_worker::fail_job& f) {
  checkpoints_.reset();
  tell_leaving(msg::rank_left{o_.name, f.epoch, steps_done(), f.why, 0, true});
  std::cout << "RESULT fail " << f.why << std::endl;
  return 1;
}

// The rank's own error text, to the orchestrator before the process exits (its exit
// status alone would not say why). Acknowledged, briefly: the process ends either way.
void managed_rank::report_failure(const std::string& why) {
  const auto orchestrator = link_.orchestrator();
  if (!orchestrator || control_lost_) return;  // nobody to tell
  caf::scoped_actor self{sys_};
  self->request(orchestrator, 5s, msg::rank_failed{o_.name, protocol_.epoch(), steps_done(), why})
      .receive([](bool) {}, [&](caf::error&) { MSOMNI_LOG(warn, "msomni-rank") << "rank_failed was not acknowledged"; });
}

int managed_rank::leave(const rank_worker::leave_job& l) {
  const std::string& reason = l.reason;
  const uint64_t step = steps_done();
  const uint64_t sum = tr_.trainer ? tr_.trainer->parameter_checksum() : 0;
  checkpoints_.reset();
  tell_leaving(msg::rank_left{o_.name, l.epoch, step, reason, sum});
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
  std::cout << "RESULT ok " << reason << " step=" << step << " checksum=" << hex << std::endl;
  return 0;
}

}  // namespace msomni::apps::rank_shell
