// job_runner (see job_runner.hpp): the runner actor and the scheduler's commands. Its state
// and the other pieces are in job_runner_state.hpp.
#include "job_runner_state.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <signal.h>

namespace msomni::cli {

namespace runner_detail {

namespace {

using namespace std::chrono_literals;

// New step reports from RUN_DIR/metrics.jsonl go to a scheduler that knows this job.
void report_steps(runner_state& st, caf::event_based_actor* self) {
  if (!st.registered) return;
  for (auto& r : st.metrics.poll()) self->send(st.scheduler, std::move(r));
}

// The command ended: what that means depends on why it was asked to stop.
void child_ended(runner_actor* self, process::exit_status status) {
  auto& st = self->state;
  st.child = {};
  st.resize_to = 0;
  remove_scratch(st);
  const int code = status.shell_code();
  switch (st.why) {
    case stopping::drain:
    case stopping::shrink: {
      const uint64_t step = checkpoint_step(st.spec.run_dir);
      if (!st.registered) {  // the scheduler that asked is gone: queue again at the next one
        say(st, "command ended (" + std::to_string(code) + ", checkpoint step " + std::to_string(step) +
                    ") while the scheduler is away");
        break;
      }
      self->send(st.scheduler, msg::job_released{st.spec.id, st.epoch, step});
      say(st, "released its GPUs (command ended with " + std::to_string(code) + ", checkpoint step " +
                  std::to_string(step) + ")");
      if (st.why == stopping::shrink) {
        keep_replicas_only(st, st.keep_replicas);
        say(st, "runs on " + std::to_string(st.replicas) + " replicas (gpus " + join(st.gpus) + ")");
        launch(st, step, "", 0);
      }
      break;
    }
    case stopping::evicted:
    case stopping::killed:
      say(st, "command stopped (" + std::to_string(code) + "); waiting to be started again");
      break;
    case stopping::no:
      if (st.registered) self->send(st.scheduler, msg::job_finished{st.spec.id});
      finish(self, code, code == 0 ? "finished" : "command failed with " + std::to_string(code));
      break;
  }
  if (!st.registered && st.scheduler && !st.over) register_again(self);
  if (!st.child.running() && !st.over && st.deferred_start) {
    const msg::job_command next = *st.deferred_start;
    st.deferred_start.reset();
    start_run(st, next);
  }
}

caf::behavior runner(runner_actor* self, job_spec spec, job_runner_env env,
                     std::function<void(int, const std::string&)> done) {
  auto& st = self->state;
  st.spec = std::move(spec);
  st.metrics = metrics_follower(st.spec.run_dir, st.spec.id);
  st.scheduler = env.scheduler;
  st.find_scheduler = std::move(env.find_scheduler);
  st.find_control = std::move(env.find_control);
  const caf::actor scheduler = st.scheduler;
  st.done = std::move(done);
  self->monitor(scheduler);
  self->set_down_handler([self](const caf::down_msg& d) { scheduler_lost(self, d); });
  self->set_exit_handler([self](const caf::exit_msg& m) {
    auto& s = self->state;
    if (s.child.running()) {
      s.child = {};  // SIGKILLed and reaped
      remove_scratch(s);
    }
    self->quit(m.reason);
  });
  st.submitted_at = std::chrono::steady_clock::now();
  self->send(scheduler, submission(st));
  self->send(self, poll_atom::value);
  self->delayed_send(self, 10s, quiet_atom::value);
  say(st, "submitted (" + std::to_string(st.spec.gpus) + " GPUs)");
  return {
      [self](const msg::job_command& c) {
        auto& s = self->state;
        s.heard = true;
        if (c.epoch < s.epoch) return;  // stale
        s.epoch = c.epoch;
        switch (static_cast<command_kind>(c.kind)) {
          case command_kind::start:
          case command_kind::colocate:
            if (s.child.running()) {  // the previous run is still ending (an eviction needs no answer)
              s.deferred_start = c;
              say(s, "starts again once the previous run has ended");
              return;
            }
            start_run(s, c);
            break;
          case command_kind::preempt:  // a shrink notice: in place, or the command restarts smaller
            s.keep_replicas = c.keep_replicas;
            say(s, "shrink to " + std::to_string(c.keep_replicas) + " replicas within " + seconds(c.drain_s) + " (" + c.reason + ")");
            resize(self, c.keep_replicas, true, c.drain_s, c.epoch);
            break;
          case command_kind::force_release:
            say(s, "force release (" + c.reason + ")");
            signal_child(s, SIGKILL, stopping::killed);
            break;
          case command_kind::evict_guest:
            say(s, "evicted as a guest (" + c.reason + ")");
            signal_child(s, SIGTERM, stopping::evicted);
            break;
          case command_kind::resize: {  // a grow: the scheduler gave the GPUs, the job's from now on
            const uint32_t from = s.replicas;
            s.gpus = c.gpus;
            s.replicas = c.replicas;
            say(s, "grow from " + std::to_string(from) + " to " + std::to_string(c.replicas) + " replicas (" + c.reason + ")");
            if (c.replicas > from) resize(self, c.replicas, false, 0, c.epoch);
            break;
          }
          case command_kind::set_share:
            break;
          case command_kind::reject:
            finish(self, 3, "rejected: " + c.reason);
            break;
          case command_kind::adopted:
            say(s, "keeps gpus " + join(c.gpus) + " (" + c.reason + ")");
            break;
          case command_kind::requeue:
            say(s, "stops and waits in the queue (" + c.reason + ")");
            signal_child(s, SIGTERM, stopping::evicted);
            break;
        }
      },
      [self](const msg::preempt_notice& n) {
        auto& s = self->state;
        s.heard = true;
        if (n.epoch < s.epoch) return;
        s.epoch = n.epoch;
        say(s, "preempted: checkpoint and release within " + seconds(n.drain_s) + " (" + n.reason + ")");
        if (s.child.running()) signal_child(s, SIGTERM, stopping::drain);
        else self->send(s.scheduler, msg::job_released{s.spec.id, n.epoch, checkpoint_step(s.spec.run_dir)});
      },
      [self](reconnect_atom) { look_for_scheduler(self); },
      [self](resize_poll_atom, caf::actor orchestrator, std::string token) {
        poll_resize(self, std::move(orchestrator), std::move(token));
      },
      [self](quiet_atom) {
        if (!self->state.heard)
          say(self->state, "no decision yet: waiting in the scheduler's queue (or the token in the info file is stale)");
      },
      [self](poll_atom) {
        auto& s = self->state;
        report_steps(s, self);
        if (s.child.running()) {
          if (const auto status = s.child.poll()) child_ended(self, *status);
        } else if (s.start_failed) {
          s.start_failed = false;
          child_ended(self, process::exit_status{127, 0});
        }
        if (!s.over) self->delayed_send(self, 100ms, poll_atom::value);
      },
  };
}

}  // namespace

}  // namespace runner_detail

caf::actor spawn_job_runner(caf::actor_system& sys, job_spec spec, job_runner_env env,
                            std::function<void(int, const std::string&)> done) {
  return sys.spawn(runner_detail::runner, std::move(spec), std::move(env), std::move(done));
}

}  // namespace msomni::cli
