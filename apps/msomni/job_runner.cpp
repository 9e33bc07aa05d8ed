// job_runner (see job_runner.hpp): the runner actor. Every message and timer becomes a call
// of job_runner_core; its actions are carried out here (job_runner_state.hpp has the pieces).
#include "job_runner_state.hpp"

#include <signal.h>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

namespace msomni::cli {

namespace runner_detail {

namespace {

using namespace std::chrono_literals;

// How often the runner looks at the command and the metrics file.
constexpr auto poll_interval = 100ms;
// After this long without a decision the runner says it is still waiting.
constexpr auto quiet_after = 10s;

template <class Atom>
void send_after(runner_actor* self, nanos after, Atom atom) {
  if (after <= nanos{0}) self->send(self, atom);
  else self->delayed_send(self, after, atom);
}

// Looks for a restarted scheduler through the info file (find_scheduler).
void find_scheduler(runner_actor* self) {
  auto& s = self->state;
  msg::scheduler_actor found;
  std::optional<std::string> error;
  try {
    if (s.find_scheduler) found = s.find_scheduler();
  } catch (const std::exception& e) {  // e.g. an info file with an unusable address
    error = e.what();
  }
  if (!found) return carry_out(self, s.core.on_scheduler_not_found(error));
  s.scheduler = found;
  s.memory.resend();  // a restarted scheduler knows no memory forecast of this job
  self->monitor(found);
  carry_out(self, s.core.on_scheduler_found(s.clock.now()));
}

// The command ended: its scratch files go, whatever the reason; the core decides the rest.
void command_ended(runner_actor* self, int shell_code) {
  auto& s = self->state;
  s.child = {};
  remove_scratch(s);
  carry_out(self, s.core.on_command_ended(shell_code, saved_step(s.core.spec().run_dir), s.clock.now()));
}

runner_impl::behavior_type runner(runner_actor* self, job_spec spec, job_runner_env env,
                     std::function<void(int, const std::string&)> done) {
  auto& st = self->state;
  st.metrics = metrics_follower(spec.run_dir, spec.id);
  st.events = events_follower(spec.run_dir);
  st.memory = job_runner::memory_report_tracker(spec.id);
  st.core = job_runner::job_runner_core(std::move(spec));
  st.scheduler = env.scheduler;
  st.find_scheduler = std::move(env.find_scheduler);
  st.find_control = std::move(env.find_control);
  st.done = std::move(done);
  self->monitor(st.scheduler);
  self->set_down_handler([self](const caf::down_msg& d) {
    auto& s = self->state;
    if (!s.scheduler || d.source != s.scheduler.address()) return;  // an earlier instance
    s.scheduler = msg::scheduler_actor{};
    carry_out(self, s.core.on_scheduler_lost(s.clock.now()));
  });
  self->set_exit_handler([self](const caf::exit_msg& m) {
    auto& s = self->state;
    if (s.child.running()) {
      // Interrupted: the command's group gets SIGTERM and its grace period, then SIGKILL.
      s.child.signal_group(SIGTERM);
      s.child.wait_for(command_stop_grace);
      s.child = {};  // reaped, or SIGKILLed and reaped
      remove_scratch(s);
    }
    self->quit(m.reason);
  });
  carry_out(self, st.core.start(st.clock.now()));
  self->send(self, poll_atom::value);
  self->delayed_send(self, quiet_after, quiet_atom::value);
  return {
      [self](const msg::job_command& c) {
        auto& s = self->state;
        carry_out(self, s.core.on_command(c, s.clock.now(), saved_step(s.core.spec().run_dir)));
      },
      [self](const msg::preempt_notice& n) {
        auto& s = self->state;
        carry_out(self, s.core.on_preempt_notice(n, saved_step(s.core.spec().run_dir)));
      },
      [self](reconnect_atom) { carry_out(self, self->state.core.on_reconnect_due(self->state.clock.now())); },
      [self](resize_poll_atom) { carry_out(self, self->state.core.on_resize_poll_due(self->state.clock.now())); },
      [self](quiet_atom) { carry_out(self, self->state.core.on_quiet_check()); },
      [self](stop_overdue_atom, uint64_t run) { carry_out(self, self->state.core.on_stop_overdue(run)); },
      [self](interrupt_atom, int sig) {
        carry_out(self, self->state.core.on_interrupted(sig == SIGINT ? job_runner::stop_signal::interrupt
                                                                       : job_runner::stop_signal::terminate));
      },
      [self](poll_atom) {
        auto& s = self->state;
        // New step reports from RUN_DIR/metrics.jsonl go to a scheduler that knows this job,
        // after the run's memory forecast (one report per poll at most, and only when it
        // changed): a step report can make the job lend its GPUs, and the scheduler must know
        // by then how much of their memory the job needs.
        if (s.core.registered()) {
          for (const auto& line : s.events.poll()) s.memory.take_line(line);
          if (auto m = s.memory.due()) self->send(s.scheduler, std::move(*m));
          for (auto& r : s.metrics.poll()) self->send(s.scheduler, std::move(r));
        }
        if (s.child.running()) {
          if (const auto status = s.child.poll()) command_ended(self, status->shell_code());
        } else if (s.start_failed) {
          s.start_failed = false;
          command_ended(self, 127);
        }
        if (!s.core.over()) self->delayed_send(self, poll_interval, poll_atom::value);
      },
  };
}

}  // namespace

void carry_out(runner_actor* self, job_runner::actions acts) {
  namespace jr = job_runner;
  auto& s = self->state;
  for (auto& a : acts) {
    if (const auto* x = std::get_if<jr::say>(&a)) say(s, x->text);
    else if (auto* t = std::get_if<jr::tell_scheduler>(&a))
      std::visit([&](auto& m) { self->send(s.scheduler, std::move(m)); }, t->message);
    else if (const auto* l = std::get_if<jr::launch>(&a)) launch(s, *l);
    else if (const auto* g = std::get_if<jr::signal_command>(&a)) signal_child(s, g->sig);
    else if (const auto* r = std::get_if<jr::ask_resize>(&a)) ask_resize(self, *r);
    else if (const auto* p = std::get_if<jr::poll_resize_status>(&a)) send_after(self, p->after, resize_poll_atom::value);
    else if (std::holds_alternative<jr::ask_status>(a)) ask_status(self);
    else if (const auto* c = std::get_if<jr::reconnect_later>(&a)) send_after(self, c->after, reconnect_atom::value);
    else if (std::holds_alternative<jr::find_scheduler>(a)) find_scheduler(self);
    else if (const auto* w = std::get_if<jr::rewind_metrics>(&a)) s.metrics.rewind(w->lines);
    else if (const auto* f = std::get_if<jr::finish_job>(&a)) finish(self, *f);
    else if (const auto* k = std::get_if<jr::kill_if_still_running>(&a))
      self->delayed_send(self, k->after, stop_overdue_atom::value, k->run);
  }
}

}  // namespace runner_detail

job_runner_actor spawn_job_runner(caf::actor_system& sys, job_spec spec, job_runner_env env,
                            std::function<void(int, const std::string&)> done) {
  return sys.spawn(runner_detail::runner, std::move(spec), std::move(env), std::move(done));
}

void interrupt_job_runner(const job_runner_actor& runner, int sig) {
  caf::anon_send(runner, interrupt_atom::value, sig);
}

}  // namespace msomni::cli
