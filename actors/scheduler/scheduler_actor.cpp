// scheduler_actor (see scheduler_actor.hpp): message <-> core translation only.
#include "scheduler_actor.hpp"

#include "guest_cost_meter.hpp"
#include "scheduler_core.hpp"
#include "scheduler_metrics.hpp"

#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace msomni::sched {

namespace {

using drain_atom = caf::atom_constant<caf::atom("sdrain")>;
using window_atom = caf::atom_constant<caf::atom("swindow")>;
using recovered_atom = caf::atom_constant<caf::atom("srecover")>;

// What the scheduler takes: its interface plus its own timers.
using scheduler_impl = msg::scheduler_actor::extend<caf::reacts_to<drain_atom>, caf::reacts_to<window_atom>,
                                                     caf::reacts_to<recovered_atom>>;
using self_ptr = metrics::accounted<scheduler_impl::base>*;

struct shell_state {
  shell_state(scheduler_settings s, scheduler_env e)
      : core(std::move(s.topo), s.params),
        predictor(s.predictor),
        guest_cost(predict::guest_cost_params{.max_jobs = s.predictor.max_jobs}),
        env(std::move(e)),
        recover_s(s.recover_s),
        recovering(s.recover_s > 0) {}
  scheduler_core core;
  predict::step_predictor predictor;
  predict::guest_cost_meter guest_cost;  // critical jobs' loss to their guests, from step reports
  scheduler_env env;
  // One entry per job the core knows (erased when it finishes or is rejected), so these
  // maps are bounded by the core's queue capacity plus the jobs holding GPUs.
  std::map<std::string, msg::job_actor> jobs;
  std::map<caf::actor_addr, std::string> job_of;
  std::map<std::string, uint64_t> resume_step;  // from the victim's job_released
  std::map<std::string, double> last_report_s;  // when each job's newest step report came
  std::set<std::string> started;                // jobs that have started at least once (queue waits counted)
  double drain_armed_s = -1;                    // deadline a drain timer is pending for
  bool window_armed = false;
  // While recovering after a restart (for recover_s): submissions held back, in arrival
  // order, with their senders (bounded by the queue capacity).
  double recover_s = 0;
  bool recovering = false;
  std::vector<std::pair<msg::job_submit, msg::job_actor>> held_back;

  double now_s() const { return std::chrono::duration<double>(env.clock->now().time_since_epoch()).count(); }
};

caf::timespan span_of(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(std::max(0.0, s)));
}

// The core's command as sent: stamped with when it was decided. `released_step`: the step of
// the job's latest job_released, newer than what the core knows (the step a stopped job was
// resubmitted at), when there is one; only a start carries a step to resume from.
msg::job_command to_message(const command& c, double at_s, std::optional<uint64_t> released_step) {
  msg::job_command m = c;
  m.at_s = at_s;
  m.resume_step = c.kind == command_kind::start ? released_step.value_or(c.resume_step) : 0;
  return m;
}

void forget(shell_state& st, const std::string& job) {
  if (auto it = st.jobs.find(job); it != st.jobs.end()) {
    st.job_of.erase(it->second.address());
    st.jobs.erase(it);
  }
  st.resume_step.erase(job);
  st.last_report_s.erase(job);
  st.started.erase(job);
  if (st.env.metrics) st.env.metrics->forget(job);
  st.predictor.forget(job);
  st.guest_cost.forget(job);
}

void arm_timers(self_ptr self, shell_state& st) {
  double deadline = st.core.next_deadline_s(), window_end = st.core.next_window_end_s();
  if (window_end >= 0 && (deadline < 0 || window_end < deadline)) deadline = window_end;
  if (deadline >= 0 && (st.drain_armed_s < 0 || deadline < st.drain_armed_s)) {
    st.drain_armed_s = deadline;
    double wait = deadline - st.now_s();
    if (wait <= 0) self->send(self, drain_atom::value);  // best-effort: no drain period
    else self->delayed_send(self, span_of(wait), drain_atom::value);
  }
  if (!st.window_armed && st.core.job_count() > 0) {
    st.window_armed = true;
    self->delayed_send(self, span_of(st.core.params().reservation_window_s), window_atom::value);
  }
}

// The core's counts into the metric series (O(1): the core keeps them as they change).
void publish_counts(const shell_state& st) {
  if (!st.env.metrics) return;
  const scheduler_core& core = st.core;
  st.env.metrics->set_counts(core.jobs_by_class_phase(), core.gpus().total(), core.gpus().free_count(),
                             core.budget_hold_windows());
  st.env.metrics->set_ended(core.ended());
  st.env.metrics->set_memory(core.guest_evictions(), core.memory_skips());
}

// What a command means for the metrics: a full preemption notice, or a job's first start
// (with its wait since submission; an adopted run started under a previous instance).
void count_command(shell_state& st, const command& c, double now) {
  if (!st.env.metrics) return;
  const job_state* j = st.core.find(c.job);
  if (!j) return;
  if (c.kind == command_kind::preempt && c.keep_replicas == 0) st.env.metrics->preempted(j->req.klass);
  if (c.kind != command_kind::start && c.kind != command_kind::colocate && c.kind != command_kind::adopted) return;
  if (!st.jobs.count(c.job) || !st.started.insert(c.job).second) return;  // untracked, or not its first start
  if (c.kind != command_kind::adopted) st.env.metrics->first_start(j->req.klass, now - j->submit_s);
}

void execute(self_ptr self, shell_state& st, const std::vector<command>& cmds) {
  const double now = st.now_s();
  for (const command& c : cmds) {
    count_command(st, c, now);
    auto it = st.resume_step.find(c.job);
    msg::job_command m =
        to_message(c, now, it == st.resume_step.end() ? std::nullopt : std::optional<uint64_t>(it->second));
    if (st.env.observer) self->send(st.env.observer, m);
    auto job = st.jobs.find(c.job);
    if (job == st.jobs.end()) continue;
    if (c.kind == command_kind::preempt && c.keep_replicas == 0)
      self->send(job->second, msg::preempt_notice{c.job, c.epoch, c.drain_s, c.reason});
    else
      self->send(job->second, m);
    if (c.kind == command_kind::reject) forget(st, c.job);
  }
  publish_counts(st);
  arm_timers(self, st);
}

// A running job's forecast into the metric series; a job that does not run (or that the
// predictor does not know) has none.
void publish_forecast(shell_state& st, const std::string& id, double horizon_s) {
  if (!st.env.metrics) return;
  const job_state* j = st.core.find(id);
  if (!j || j->phase != job_phase::running || !st.predictor.knows(id)) {
    st.env.metrics->forget(id);
    return;
  }
  auto last = st.last_report_s.find(id);
  const double since = last == st.last_report_s.end() ? 0.0 : std::max(0.0, st.now_s() - last->second);
  const auto f = st.predictor.forecast(id, horizon_s, since);
  st.env.metrics->set_forecast(id, f.windows.empty() ? 0.0 : f.windows.front().length_s, f.confidence);
}

void publish_forecasts(shell_state& st, double horizon_s) {
  for (const auto& [id, handle] : st.jobs) publish_forecast(st, id, horizon_s);
}

// Forecasts and guest costs for every critical job holding GPUs, then the window's
// co-location decisions.
void on_window(self_ptr self, shell_state& st) {
  const double horizon_s = st.core.params().reservation_window_s;
  for (const auto& [id, handle] : st.jobs) {
    const job_state* j = st.core.find(id);
    if (!j || j->req.klass != job_class::critical || j->phase != job_phase::running) continue;
    st.core.report_guest_delay(id, st.guest_cost.lost_s(id), st.now_s());
    if (!st.predictor.knows(id)) continue;
    auto last = st.last_report_s.find(id);
    double since = last == st.last_report_s.end() ? 0.0 : std::max(0.0, st.now_s() - last->second);
    auto f = st.predictor.forecast(id, horizon_s, since);
    st.core.set_forecast(id, host_forecast_of(f, st.predictor.stats(id), st.predictor.params().warmup_steps));
  }
  execute(self, st, st.core.window(st.now_s()));
  publish_forecasts(st, horizon_s);
}

void on_finished(self_ptr self, shell_state& st, const std::string& job, const job_outcome& how) {
  if (!st.jobs.count(job)) return;  // repeat, or never submitted here
  forget(st, job);
  execute(self, st, st.core.finished(job, st.now_s(), how));
}

// The history of ended jobs, newest first, as status rows.
void list_ended(const scheduler_core& core, msg::scheduler_status& s) {
  const auto& entries = core.ended().entries();
  for (auto it = entries.rbegin(); it != entries.rend() && s.ended.size() < msg::scheduler_status::max_status_rows;
       ++it) {
    msg::scheduler_job_row row;
    row.job = it->id;
    row.job_class = it->klass;
    row.phase = to_string(it->outcome.end);
    row.since_s = it->at_s;
    row.exit_code = it->outcome.exit_code;
    row.checkpoint_step = it->outcome.checkpoint_step;
    s.ended.push_back(std::move(row));
  }
  s.ended_capacity = core.ended().capacity();
}

msg::scheduler_status status_of(const shell_state& st) {
  const scheduler_core& core = st.core;
  const queue_counts c = core.counts();
  msg::scheduler_status s;
  s.policy = to_string(core.params().policy);
  s.gpus_total = core.gpus().total();
  s.gpus_free = core.gpus().free_count();
  s.pending_critical = c.pending_by_class[0];
  s.pending_regular = c.pending_by_class[1];
  s.pending_best_effort = c.pending_by_class[2];
  s.queue_capacity = core.params().queue_capacity;
  s.running = c.running;
  s.borrowed = c.borrowed;
  s.draining = c.draining;
  s.guests = c.guests;
  s.decisions = core.decisions_total();
  s.reserve_deferrals = core.reserve_deferrals();
  s.budget_holds = core.budget_holds();
  s.rejected = c.rejected;
  s.recovering = st.recovering;
  s.held_back = st.held_back.size();
  size_t total = 0;
  for (const job_state* j : core.listing(msg::scheduler_status::max_status_rows, total)) {
    const bool pending = j->phase == job_phase::pending;
    const bool host = j->req.klass == job_class::critical && j->phase == job_phase::running;
    const bool omni = core.params().policy == policy_kind::omni;
    hold_note h = core.hold_of(*j);
    // A critical host: why it lends nothing in the next window, as its forecast says now.
    if (h.reason == hold_reason::none && host && omni) h = core.lending_hold_note(j->req.id);
    msg::scheduler_job_row row;
    row.job = j->req.id;
    row.job_class = j->req.klass;
    row.phase = to_string(j->phase);
    row.gpus = pending ? j->req.gpus : static_cast<uint32_t>(j->gpus.size());
    row.replicas = j->replicas;
    row.borrowed = j->borrowed;
    row.host = j->host;
    row.since_s = pending ? j->submit_s : j->run_since_s;
    row.hold = to_string(h.reason);
    row.share = j->phase == job_phase::guest ? j->share : host ? core.guest_share(j->req.id) : 0.0;
    if (h.reason != hold_reason::none) {
      explained e = hold_explained(h);
      row.hold_detail = std::move(e.text);
      row.figures = e.figures;
    } else if (host && omni) {  // it lends: why, with the numbers
      explained e = lending_explained(j->req.id, core.lending_figures_of(j->req.id), hold_reason::none);
      row.why = std::move(e.text);
      row.figures = e.figures;
    } else if (j->phase == job_phase::guest) {
      row.why = j->placed.text;
      row.figures = j->placed.figures;
    }
    s.jobs.push_back(std::move(row));
  }
  std::string held_job;
  const hold_note& held = core.held(&held_job);
  s.held = to_string(held.reason);
  s.held_job = held_job;
  if (held.reason != hold_reason::none) {
    explained e = hold_explained(held);
    s.held_detail = std::move(e.text);
    s.held_figures = e.figures;
  }
  // The newest decisions and holds, oldest first, as msomni-sched printed them.
  const auto& log = core.log();
  for (size_t i = log.size() > msg::scheduler_status::max_recent_decisions
                      ? log.size() - msg::scheduler_status::max_recent_decisions
                      : 0;
       i < log.size(); ++i)
    s.recent.push_back(to_message(log[i].cmd, log[i].at_s, std::nullopt));
  s.best_effort_drain_s = core.params().best_effort_drain_s;
  s.jobs_listed_of = total;
  s.now_s = st.now_s();
  s.metrics_address = st.env.metrics_address;
  list_ended(core, s);
  return s;
}

// Remembers `handle` as where `job`'s commands go; a job that goes away is finished.
void track(self_ptr self, shell_state& st, const std::string& job, const msg::job_actor& handle) {
  if (!handle) return;
  st.jobs[job] = handle;
  st.job_of[handle.address()] = job;
  self->monitor(handle);
}

// A refusal the shell makes before the core sees the job (nothing to forget).
void reply_reject(self_ptr self, shell_state& st, const std::string& job, const msg::job_actor& handle,
                  std::string reason) {
  command rej = make_command(command_kind::reject, job, 0);
  rej.reason = std::move(reason);
  if (handle) self->send(handle, to_message(rej, st.now_s(), std::nullopt));
}

// A class byte the catalog does not know is refused before the core sees it.
bool refuse_unknown_class(self_ptr self, shell_state& st, const msg::job_submit& s,
                          const msg::job_actor& handle) {
  const auto number = static_cast<uint8_t>(s.job_class);
  if (number <= static_cast<uint8_t>(job_class::best_effort)) return false;
  reply_reject(self, st, s.job, handle, "unknown job_class " + std::to_string(number));
  return true;
}

job_request request_of(const msg::job_submit& s) {
  return {s.job, s.job_class, s.gpus, s.gpus_per_replica, s.min_replicas, s.submitted_ago_s, s.memory_bytes};
}

void take_submit(self_ptr self, shell_state& st, const msg::job_submit& s, const msg::job_actor& handle) {
  if (st.jobs.count(s.job) || refuse_unknown_class(self, st, s, handle)) return;
  track(self, st, s.job, handle);
  execute(self, st, st.core.submit(request_of(s), st.now_s()));
}

scheduler_impl::behavior_type scheduler(self_ptr self, std::shared_ptr<shell_state> st) {
  self->account_as("scheduler", st->env.metrics ? st->env.metrics->registry() : nullptr);
  if (st->recovering) self->delayed_send(self, span_of(st->recover_s), recovered_atom::value);
  self->set_down_handler([self, st](caf::down_msg& d) {
    auto it = st->job_of.find(d.source);
    if (it != st->job_of.end()) on_finished(self, *st, std::string(it->second), {job_end::lost, 0, 0});
  });
  return {
      [self, st](const msg::job_submit& s) {
        auto handle = caf::actor_cast<msg::job_actor>(self->current_sender());
        if (!st->recovering) return take_submit(self, *st, s, handle);
        if (st->held_back.size() < st->core.params().queue_capacity) {
          st->held_back.emplace_back(s, handle);
          return;
        }
        reply_reject(self, *st, s.job, handle, "queue full (queue_capacity) while the scheduler recovers from a restart");
      },
      [self, st](const msg::job_rejoin& r) {
        auto handle = caf::actor_cast<msg::job_actor>(self->current_sender());
        if (st->jobs.count(r.request.job) || refuse_unknown_class(self, *st, r.request, handle)) return;
        track(self, *st, r.request.job, handle);
        execute(self, *st, st->core.adopt(request_of(r.request), r.held, r.replicas, r.epoch, st->now_s()));
        // While recovering nothing is placed: GPUs of jobs yet to rejoin look free.
        if (!st->recovering) execute(self, *st, st->core.schedule_now(st->now_s()));
      },
      [self, st](recovered_atom) {
        st->recovering = false;
        auto held = std::move(st->held_back);
        st->held_back.clear();
        execute(self, *st, st->core.schedule_now(st->now_s()));  // requeued rejoins first
        for (auto& [s, handle] : held) take_submit(self, *st, s, handle);
      },
      [st](const msg::job_step_report& r) {
        if (!st->jobs.count(r.job)) return;
        const predict::step_sample sample{r.step_s, r.data_wait_s, r.checkpoint_s, r.bubble_share};
        st->predictor.observe(r.job, sample);
        if (const job_state* j = st->core.find(r.job);
            j && j->req.klass == job_class::critical && j->phase == job_phase::running)
          st->guest_cost.observe(r.job, sample, st->core.has_guests(r.job));
        st->last_report_s[r.job] = st->now_s();
        // The series follow the job's steps, not only the reservation windows.
        publish_forecast(*st, r.job, st->core.params().reservation_window_s);
      },
      // A job's memory forecast (msomni job, from its run's memory advice): a host's bounds
      // its guests, a guest's raises its need; guests that no longer fit are evicted at once.
      [self, st](const msg::job_memory_report& r) {
        std::vector<command> out;
        const bool taken = st->jobs.count(r.job) &&
                           st->core.report_memory(r.job, r.forecast_peak_bytes, r.device_bytes, st->now_s(), out);
        if (st->env.metrics) st->env.metrics->memory_report(taken);
        execute(self, *st, out);
      },
      [self, st](const msg::job_released& r) {
        const job_state* j = st->core.find(r.job);
        if (j && j->phase == job_phase::draining && j->epoch == r.epoch) st->resume_step[r.job] = r.checkpoint_step;
        execute(self, *st, st->core.released(r.job, r.epoch, st->now_s()));
      },
      [self, st](const msg::job_finished& f) {
        on_finished(self, *st, f.job, outcome_of(f.exit_code, f.stopped, f.checkpoint_step));
      },
      [st](const msg::scheduler_status_request&) { return status_of(*st); },
      [self, st](drain_atom) {
        st->drain_armed_s = -1;
        execute(self, *st, st->core.expire(st->now_s()));
      },
      [self, st](window_atom) {
        st->window_armed = false;
        on_window(self, *st);
      },
  };
}

}  // namespace

msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_settings s, scheduler_env env) {
  if (!env.clock) throw std::invalid_argument("spawn_scheduler: scheduler_env.clock is required");
  auto st = std::make_shared<shell_state>(std::move(s), std::move(env));
  publish_counts(*st);  // all GPUs free, no jobs: before the actor takes its first message
  return sys.spawn(scheduler, std::move(st));
}

}  // namespace msomni::sched
