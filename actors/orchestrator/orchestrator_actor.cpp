// orchestrator_actor (see orchestrator_actor.hpp).
#include "orchestrator_actor.hpp"

#include "control_metrics.hpp"
#include "data_watch.hpp"
#include "memory_journal.hpp"
#include "core/json_number.hpp"
#include "core/json_text.hpp"
#include "core/log.hpp"
#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_json.hpp"
#include "orchestrator_json.hpp"
#include "progress_core.hpp"
#include "record_lineage.hpp"
#include "run_summary.hpp"

#include <csignal>
#include <caf/actor_system.hpp>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iterator>
#include <iostream>
#include <map>
#include <memory>
#include <set>

namespace msomni::orchestrator {

namespace {

using tick_atom = caf::atom_constant<caf::atom("otick")>;
using gather_atom = caf::atom_constant<caf::atom("ogather")>;  // the node check's gather deadline
constexpr auto tick_interval = std::chrono::milliseconds(200);
// A gap between ticks this long is a pause of this process: a quarter of the silence that
// declares an agent down, at least 2 s.
nanos own_pause_limit(nanos silence) { return std::max<nanos>(std::chrono::seconds(2), silence / 4); }
// Advice lines the journal takes from the memory watermark predictor; later ones are counted
// in msomni_memory_advice_total only.
constexpr uint64_t memory_advice_journaled_max = 1000;
// Replayed memory fit decisions sent to one rank before a plan (the rank's inbox holds as many).
constexpr size_t memory_fit_replay_max = 1024;

struct shell_state {
  shell_state(elastic_settings s, orchestrator_env e)
      : core(s), progress(s.total_steps), data(e.max_data_wait_ms), health(e.health), autoscale(e.autoscale),
        tally(s.total_steps), env(std::move(e)), agent_gather(s.agent_gather) {
    if (env.metrics) control = std::make_unique<control_metrics>(*env.metrics->own(), env.job_name);
    memory = make_memory_hook(env.journal, env.metrics ? env.metrics->own() : nullptr);
    if (!env.fit_replay) env.fit_replay = std::make_shared<memory_fit_replay>();
    if (env.metrics_last_step) progress.expect_after(*env.metrics_last_step);
  }
  elastic_core core;
  progress_core progress;
  bad_sample_ledger bad_ledger;  // which samples were bad, as the ranks say
  data_watch data;
  training_health health;
  autoscale_core autoscale;
  run_tally tally;  // what summary.json says about this run
  uint64_t autoscale_epoch = 0;  // a new epoch is a resize: the autoscale windows start over
  orchestrator_env env;
  real_clock clock;
  std::optional<time_point> last_tick;  // when the tick ran last: a long gap is this process's own pause
  std::map<std::string, caf::actor> workers;  // rank name -> its worker actor
  std::map<std::string, caf::actor> agents;   // node -> agent actor
  std::map<caf::actor_addr, std::pair<bool, std::string>> watched;  // (is_agent, name)
  bool done = false;
  bool stop_sent = false;
  uint64_t memory_advice_seen = 0;  // from the memory watermark predictor
  bool stop_by_sigterm = false;  // the first stop accepted came as SIGTERM (a preemption)
  bool stop_by_deposition = false;  // the first stop accepted came from losing the leadership
  // A stop signal the cluster's engine sent the agents' processes (agent_signalled): the
  // signal and where it was seen; 0 before any.
  int agent_signal = 0;
  std::string agent_signal_from;
  std::set<std::string> release_tried;  // nodes offered back to the cluster's engine, once each
  record_lineage lineage;  // which step records around a rollback are the state's own
  std::unique_ptr<control_metrics> control;  // null: metrics off
  // The newest journaled events, for `msomni inspect`'s elastic timeline (bounded).
  std::deque<ordered_json> timeline;
  // The newest memory_advice and memory_fit events, for `msomni inspect`'s memory view: apart
  // from the timeline, which a run of fits every step would otherwise fill (bounded).
  std::deque<ordered_json> memory_events;
  std::map<std::string, uint64_t> refused_reports;  // per source, for logging the first of each
  std::unique_ptr<memory_hook> memory;  // the ranks' memory samples (memory_journal.hpp)
  // The agents' pre-flight (node_preflight): null when the agents go to the core at once.
  std::optional<node_preflight> preflight;
  std::unique_ptr<health::node_check_core> node_checks;
  std::map<std::string, msg::agent_hello> held_agents;  // joined, not admitted yet
  bool preflight_failed = false;
  // How long after the first agent the initial node check waits for the other listed nodes
  // (elastic_settings::agent_gather, what placement waits too); armed once.
  nanos agent_gather;
  bool gather_armed = false;
};

constexpr size_t timeline_capacity = 200;
constexpr size_t memory_events_capacity = 20;

void execute(metrics::accounted_actor* self, shell_state& st, std::vector<action> acts);
std::string health_summary(const shell_state& st);

// Every event line carries the job's step and epoch; `rank` and `node` where the event is
// about one.
void journal(shell_state& st, const std::string& kind, const std::string& detail, const std::string& rank = {},
             const std::string& node = {}, const std::vector<std::pair<std::string, int64_t>>& numbers = {}) {
  event_context ctx;
  ctx.step = st.progress.last_step();
  ctx.epoch = st.core.epoch();
  ctx.rank = rank;
  ctx.node = node;
  for (const auto& [name, value] : numbers) ctx.fields[name] = value;
  if (st.env.journal) st.env.journal->event(kind, detail, ctx);
  if (st.control) st.control->on_event(kind, detail);
  st.tally.on_event(kind);
  ordered_json e = ordered_json::object();
  e["time_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  e["kind"] = kind;
  e["epoch"] = st.core.epoch();
  e["step"] = st.progress.last_step();
  if (!rank.empty()) e["rank"] = rank;
  if (!node.empty()) e["node"] = node;
  e["detail"] = detail;
  st.timeline.push_back(std::move(e));
  if (st.timeline.size() > timeline_capacity) st.timeline.pop_front();
  std::cerr << (st.env.progress_on_tty ? "\n" : "") << "msomni-run: " << kind << ": " << detail << "\n";
}

// A journal that cannot be written ends the job: going on would leave no record of it.
void stop_if_journal_failed(metrics::accounted_actor* self, shell_state& st) {
  if (!st.env.journal || !st.env.journal->failed() || st.done) return;
  execute(self, st, {finish_job{false, "the run journal cannot be written (" + st.env.journal->failure() +
                                           "); stopping rather than training without a record"}});
}

void count_fit(shell_state& st, const char* result) {
  if (st.env.metrics) st.env.metrics->own()->counter("msomni_memory_fits_total", {{"result", result}}).Increment();
}

// Before a plan that restores a checkpoint: the memory fit decisions of `member`'s slot for the
// steps after the checkpoint, so the steps it runs again are fitted as they were (sent first,
// they are in the rank's inbox before the plan starts its steps).
void send_fit_replays(metrics::accounted_actor* self, shell_state& st, const caf::actor& worker,
                      const msg::join_world& plan, const std::string& member) {
  const auto at = std::find(plan.members.begin(), plan.members.end(), member);
  if (at == plan.members.end() || !st.env.fit_replay) return;
  const auto rank = static_cast<uint32_t>(at - plan.members.begin());
  const auto world = static_cast<uint32_t>(plan.members.size());
  const uint64_t from = st.env.latest_checkpoint_step ? st.env.latest_checkpoint_step() : 0;
  for (auto& f : st.env.fit_replay->for_slot(rank, world, from, memory_fit_replay_max)) {
    f.rank_name = member;
    self->send(worker, f);
    count_fit(st, "replayed");
  }
}

// Whether `pid` is the msomni-rank process named `name` now (its command line says so): a pid
// read earlier may be someone else's once its process was reaped.
bool is_rank_process(int64_t pid, const std::string& name) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto program_end = cmd.find('\0');
  const auto program = cmd.substr(0, program_end);
  const bool is_rank = program.size() >= 11 && program.compare(program.size() - 11, 11, "msomni-rank") == 0;
  return is_rank && cmd.find(std::string("\0--name\0", 8) + name + '\0') != std::string::npos;
}

// A rank this process adopted is not its agent's child: a stop reaches it by its pid, on the
// node of the in-process agent (where the previous leader started it).
void stop_adopted(const shell_state& st, const std::string& name, const std::string& node) {
  if (!st.core.adopted() || node != st.env.in_process_agent) return;
  const auto it = st.core.members().find(name);
  if (it == st.core.members().end() || !is_rank_process(it->second.pid, name)) return;
  ::kill(static_cast<pid_t>(it->second.pid), SIGKILL);
}

void execute_one(metrics::accounted_actor* self, shell_state& st, action& a) {
  // A deposed leader whose ranks follow the job's leader tells them nothing more and starts
  // no rank: they belong to the next leader (what happened in between is still journaled).
  if (st.env.ranks_follow_leader && st.env.deposed && *st.env.deposed &&
      (std::holds_alternative<send_plan>(a) || std::holds_alternative<spawn_on_agent>(a) ||
       std::holds_alternative<answer_rejoin>(a)))
    return;
  if (auto* p = std::get_if<send_plan>(&a)) {
    if (p->plan.source == static_cast<uint8_t>(msg::state_source::checkpoint) && st.env.latest_checkpoint_step) {
      st.lineage.on_rollback_plan(p->plan.epoch);
      const auto from = st.env.latest_checkpoint_step();
      const auto reached = st.progress.last_step();
      st.data.rollback();
      if (st.progress.rollback_to(from) && st.env.journal)
        st.env.journal->begin_attempt(from, "rolled back from step " + std::to_string(reached) +
                                                " to the last checkpoint; steps " + std::to_string(from + 1) + ".." +
                                                std::to_string(reached) + " are repeated (fewer if the ranks commit a "
                                                "checkpoint at this barrier; their JOINED lines name the step they load)");
    }
    const bool restores = p->plan.source == static_cast<uint8_t>(msg::state_source::checkpoint);
    for (const auto& to : p->to)
      if (auto it = st.workers.find(to); it != st.workers.end()) {
        if (restores) send_fit_replays(self, st, it->second, p->plan, to);
        self->send(it->second, p->plan);
      }
  } else if (auto* s = std::get_if<spawn_on_agent>(&a)) {
    auto it = st.agents.find(s->node);
    if (it == st.agents.end()) {
      execute(self, st, st.core.on_rank_down(s->name, "no agent on node " + s->node, st.clock.now()));
      return;
    }
    self->send(it->second, msg::spawn_rank{s->name, st.env.rank_args(s->name)});
  } else if (auto* k = std::get_if<stop_on_agent>(&a)) {
    if (auto it = st.agents.find(k->node); it != st.agents.end()) self->send(it->second, msg::stop_rank{k->name, k->reason});
    stop_adopted(st, k->name, k->node);
  } else if (auto* e = std::get_if<journal_event>(&a)) {
    journal(st, e->kind, e->detail, e->rank, e->node, e->numbers);
  } else if (auto* r = std::get_if<answer_rejoin>(&a)) {
    const auto it = st.workers.find(r->name);
    if (it == st.workers.end()) return;
    // An adopted rank's records after what metrics.jsonl holds come again: written once. A
    // member that reconnected to this process sends again what this process did not journal.
    const auto recorded = r->in_place ? st.progress.last_step() : st.env.recorded_step;
    if (r->adopted && !r->in_place) st.progress.resume_after(recorded);
    self->send(it->second, msg::rejoin_answer{r->adopted, recorded, r->reason});
    if (!r->adopted) {  // it leaves: its end is no failure
      st.watched.erase(it->second.address());
      st.workers.erase(it);
    }
  } else if (auto* f = std::get_if<finish_job>(&a)) {
    if (st.done) return;
    st.done = true;
    journal(st, !f->ok ? "job_failed" : f->stopped ? "job_stopped" : "job_finished", f->reason);
    const auto latest = st.env.latest_checkpoint_step ? st.env.latest_checkpoint_step() : 0;
    if (st.progress.bad_samples_total() > 0) journal(st, "bad_samples_total", st.progress.bad_samples_summary());
    if (auto n = st.data.finish()) journal(st, n->kind, n->detail);
    if (st.data.downgraded_total() > 0 || st.data.slow_steps() > 0) journal(st, "data_summary", st.data.summary());
    const auto summary = f->reason + "\n  " + st.progress.summary() + "\n  " + st.progress.bad_samples_summary() + "; " +
                         health_summary(st) + "\n  " + st.data.summary() + "\n  " +
                         (latest ? "last checkpoint: step " + std::to_string(latest) : std::string("no checkpoint committed"));
    job_outcome out;
    out.ok = f->ok;
    out.stopped = f->stopped;
    out.preempted = f->stopped && st.stop_by_sigterm;
    out.deposed = f->stopped && st.stop_by_deposition;
    out.preflight_failed = st.preflight_failed;
    out.reason = f->reason;
    out.text = summary;
    out.facts = st.tally.facts(st.progress.last_step(), st.progress.bad_samples_by_reason(), st.data.downgraded_total(),
                               st.data.slow_steps());
    out.facts.bad_sample_list = st.bad_ledger.entries();
    out.facts.bad_samples_unlisted_draws = st.bad_ledger.unlisted_draws();
    out.facts.mismatched_names = st.progress.mismatched_names();
    if (st.env.on_finish) st.env.on_finish(out);
  }
}

void execute(metrics::accounted_actor* self, shell_state& st, std::vector<action> acts) {
  for (auto& a : acts) execute_one(self, st, a);
}

// Non-finite and spiking training, judged on each journaled step (every rank has the same
// all-reduced loss and gradient norm, so rank 0's record speaks for all).
void judge_health(metrics::accounted_actor* self, shell_state& st, const msg::step_record& r, time_point now) {
  auto v = st.health.on_step(r.step, r.loss, r.grad_norm, r.optimizer_skipped);
  for (const auto& e : v.events) journal(st, e.kind, e.detail);
  if (v.action == health_verdict::act::roll_back) {
    auto acts = st.core.on_training_diverged(v.reason, now);
    if (!acts.empty()) st.health.on_rolled_back();
    execute(self, st, std::move(acts));
  } else if (v.action == health_verdict::act::stop) {
    execute(self, st, st.core.fail(v.reason));
  }
}

// Utilisation-driven scaling on each journaled step: one replica more or less through the
// same scale_to a user's scale-up / scale-down takes; every decision and refusal journaled.
void judge_utilisation(metrics::accounted_actor* self, shell_state& st, const msg::step_record& r, time_point now) {
  if (st.core.epoch() != st.autoscale_epoch) {
    // The first epoch is the start, not a resize: no cooldown for it.
    if (st.autoscale_epoch != 0) st.autoscale.on_resized(now);
    st.autoscale_epoch = st.core.epoch();
  }
  const double busy = busy_share(r.step_time_ns / 1e6, r.data_wait_ns / 1e6, r.checkpoint_ns / 1e6);
  const auto d = st.autoscale.on_step(busy, now, st.core.world(), st.core.can_grow(), st.core.can_shrink());
  if (d.delta == 0) {
    if (!d.reason.empty()) journal(st, "autoscale_refused", d.reason);
    return;
  }
  auto o = st.core.scale_to(st.core.world() + d.delta, st.env.autoscale.grace_period, now);
  journal(st, o.ok ? "autoscale" : "autoscale_refused", d.reason + "; " + o.text);
  st.autoscale.on_resized(now);
  execute(self, st, std::move(o.actions));
}

std::string health_summary(const shell_state& st) {
  const auto& c = st.health.counts();
  if (c.nonfinite_steps == 0 && c.loss_spikes == 0) return "training stayed finite, no loss spikes";
  return std::to_string(c.nonfinite_steps) + " non-finite steps (" + std::to_string(c.skipped_steps) +
         " updates skipped), " + std::to_string(c.loss_spikes) + " loss spikes, " + std::to_string(c.rollbacks) +
         " rollbacks for them";
}

// The core's status with the bad samples met so far (all ranks): by reason, and which.
ordered_json status_with_samples(const shell_state& st) {
  auto j = orchestrator::status_json(st.core.status(), st.progress.bad_samples_by_reason());
  j["bad_sample_list"] = bad_sample_list_json(st.bad_ledger.entries());
  j["bad_samples_unlisted_draws"] = st.bad_ledger.unlisted_draws();
  j["mismatched_names"] = st.progress.mismatched_names();
  return j;
}

std::string status_reply_json(const shell_state& st) { return json_text(status_with_samples(st)); }

// `msomni status` for a person: the core's lines, the bad samples by reason and which.
std::string status_reply_text(const shell_state& st) {
  std::string t = status_text(st.core.status()) + "  " + st.progress.bad_samples_summary() + "\n";
  for (const auto& l : bad_sample_lines(st.bad_ledger.entries(), st.bad_ledger.unlisted_draws(), 8)) t += "    " + l + "\n";
  if (const auto n = st.progress.mismatched_names())
    t += "  mismatched names " + std::to_string(n) + " (samples decoded by bytes of another format than their names say)\n";
  return t;
}

// What `msomni inspect` shows: the status (the same fields as `msomni status --json`), every
// metric family of the job, the elastic timeline and the job's idle-window forecast.
void remember_memory_event(shell_state& st, const char* kind, const std::string& detail, uint64_t step,
                           const std::string& rank) {
  ordered_json e = ordered_json::object();
  e["time_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  e["kind"] = kind;
  e["epoch"] = st.core.epoch();
  e["step"] = step;
  e["rank"] = rank;
  e["detail"] = detail;
  st.memory_events.push_back(std::move(e));
  if (st.memory_events.size() > memory_events_capacity) st.memory_events.pop_front();
}

std::string inspect_reply_json(const shell_state& st) {
  auto j = status_with_samples(st);
  j["metrics"] = metrics::families_json(st.env.metrics->collect());
  auto& events = j["timeline"] = ordered_json::array();
  for (const auto& e : st.timeline) events.push_back(e);
  const auto f = st.control->forecast();
  auto& p = j["predictor"] = ordered_json::object();
  put_number(p, "idle_ratio", f.idle_mean);
  put_number(p, "confidence", f.confidence);
  put_number(p, "horizon_s", f.horizon_s);
  auto& windows = p["windows"] = ordered_json::array();
  for (const auto& w : f.windows) {
    ordered_json row = ordered_json::object();
    put_number(row, "start_in_s", w.start_in_s);
    put_number(row, "length_s", w.length_s);
    windows.push_back(std::move(row));
  }
  const auto& ms = st.env.memory;
  auto& memory = j["memory"] = ordered_json::object();
  memory["predictor_enabled"] = ms.predictor_enabled;
  put_number(memory, "safety_margin_gb", ms.safety_margin_gb);
  put_number(memory, "device_memory_gb", ms.device_memory_gb);
  memory["horizon_steps"] = ms.horizon_steps;
  auto& memory_events = memory["events"] = ordered_json::array();
  for (const auto& e : st.memory_events) memory_events.push_back(e);
  return json_text(j);
}

// Reports pushed by ranks and agents; a refused one is logged the first time for its source
// and then every 100th time (the count is in msomni_metrics_reports_total{result="refused"}).
void take_report(shell_state& st, const msg::metrics_report& r) {
  if (!st.env.metrics) return;
  std::string why;
  if (st.env.metrics->accept(r, why)) return;
  if (st.refused_reports.size() > 1024) st.refused_reports.clear();  // bounded: a flood of names
  if (st.refused_reports[r.source]++ % 100 == 0) {
    MSOMNI_LOG(warn, "orchestrator") << "dropped a metrics report from " << r.source << ": " << why;
  }
}

// The series of processes that are gone end with them: only members still there and agents
// still connected keep theirs.
void forget_departed_sources(shell_state& st) {
  if (!st.env.metrics) return;
  for (const auto& source : st.env.metrics->sources()) {
    const auto m = st.core.members().find(source);
    const bool member = m != st.core.members().end() && m->second.state != member_state::left &&
                        m->second.state != member_state::dead;
    if (!member && !st.agents.count(source)) st.env.metrics->forget(source);
  }
}

msg::control_reply handle_control(metrics::accounted_actor* self, shell_state& st, const msg::control_request& r) {
  if (!same_token(r.token, st.env.token)) {
    journal(st, "control_refused", "a " + r.verb + " request without the run's token (from " + r.requested_by + ")");
    return {false, "refused: missing or wrong token (read it from the run directory's control.json)", ""};
  }
  const auto now = st.clock.now();
  if (r.verb == "status")
    return {true, status_reply_text(st), status_reply_json(st)};
  if (r.verb == "inspect") {
    if (!st.env.metrics)
      return {false, "refused: metrics are off for this job (set cluster.metrics_port to a port or \"auto\")", ""};
    return {true, "", inspect_reply_json(st)};
  }
  control_outcome o;
  if (r.verb == "scale-down" || r.verb == "scale-up") {
    const auto grace = std::chrono::duration_cast<nanos>(std::chrono::duration<double>(r.grace_period_s));
    o = r.verb == "scale-down" ? st.core.scale_down(r.replicas, grace, now) : st.core.scale_up(r.replicas, now);
  } else if (r.verb == "stop") {
    o = st.core.stop(now);
    if (o.ok) st.stop_sent = true;  // a later signal adds nothing: the job stops as `msomni stop` asked
  } else {
    return {false, "refused: unknown verb \"" + r.verb + "\" (status, inspect, scale-down, scale-up, stop)", ""};
  }
  const auto what = r.verb == "stop" ? r.verb : r.verb + " " + std::to_string(r.replicas);
  journal(st, o.ok ? "control" : "control_refused", what + " by " + r.requested_by + ": " + o.text);
  execute(self, st, std::move(o.actions));
  return {o.ok, o.text, status_reply_json(st)};
}

// A step record the job's state descends from: its metrics line, notes and progress, then
// what the cores make of it. Once the job has ended (failed, stopped or finished) a late
// record of a rank still winding down is after the outcome and is not journaled: the
// outcome and its counts are final.
void journal_step(metrics::accounted_actor* self, shell_state& st, const msg::step_record& r) {
  if (st.done) return;
  const auto now = st.clock.now();
  const auto wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  const auto line = st.progress.on_step(r, now, wall_ms);
  if (line && st.control) st.control->on_step(r);
  if (line) st.tally.on_step(*line);
  if (line) {
    auto record = metrics_json(*line);
    st.memory->annotate(record, r.step);
    if (st.env.journal && !st.env.journal->metric(std::move(record))) stop_if_journal_failed(self, st);
    if (auto gap = st.progress.take_gap())
      journal(st, "steps_unrecorded",
              "steps " + std::to_string(gap->first) + ".." + std::to_string(gap->last) +
                  (gap->earlier ? " were trained by an earlier attempt and are in the checkpoint this one loaded, but "
                                  "their records never reached metrics.jsonl (that attempt's control process ended "
                                  "between the checkpoint's commit and their journaling)"
                                : " were trained but their records never reached this control process (a rank keeps a "
                                  "bounded history of them while no control process answers, and the oldest went "
                                  "first); metrics.jsonl lacks them"),
              "", "", {{"first", static_cast<int64_t>(gap->first)}, {"last", static_cast<int64_t>(gap->last)}});
    if (auto note = st.progress.take_bad_samples_note()) journal(st, "bad_samples", *note);
    for (const auto& n : st.data.on_step(r)) journal(st, n.kind, n.detail);
    const bool tty = st.env.progress_on_tty;
    if (tty || r.step % 10 == 0 || st.progress.finished())
      std::cerr << (tty ? "\r" : "") << st.progress.progress_line() << (tty ? "   " : "\n") << std::flush;
  }
  execute(self, st, st.core.on_step(r.step, r.world_size, now));
  if (line) judge_health(self, st, r, now);
  if (line && !st.done) judge_utilisation(self, st, r, now);
}

// An agent joins the elastic core: it offers its slots.
void admit_agent(metrics::accounted_actor* self, shell_state& st, const msg::agent_hello& a) {
  execute(self, st, st.core.on_agent({a.node, a.rack, a.switch_name, a.slots, true}, st.clock.now()));
}

// How long an agent may take over its node's checks (full level included), and one pair.
constexpr auto node_check_timeout = std::chrono::seconds(300);
constexpr auto pair_probe_timeout = std::chrono::seconds(90);

std::string pass_list(const nlohmann::ordered_json& report) {
  std::string out;
  for (const auto& n : report.value("nodes", nlohmann::ordered_json::array()))
    out += (out.empty() ? "" : ", ") + n.value("node", "?") + " " + n.value("verdict", "?");
  if (report.contains("multinode")) out += "; multinode " + report["multinode"].value("verdict", "?");
  return out;
}

// Carries out node_check_core's actions: requests to the agents, whose answers go back to it.
void run_node_checks(metrics::accounted_actor* self, const std::shared_ptr<shell_state>& st,
                     std::vector<health::node_checks::action> acts) {
  namespace nc = health::node_checks;
  for (auto& a : acts) {
    if (st->done) return;
    if (auto* c = std::get_if<nc::ask_check>(&a)) {
      const auto node = c->node;
      const auto it = st->agents.find(node);
      if (it == st->agents.end()) {
        run_node_checks(self, st, st->node_checks->on_no_report(node, "the agent is gone"));
        continue;
      }
      self->request(it->second, node_check_timeout, st->preflight->request)
          .then(
              [self, st, node](const msg::node_check_report& r) {
                auto acts = st->node_checks->on_report(node, r.report_json, r.probe_address);
                journal(*st, "node_checked", node + ": " + st->node_checks->verdict_of(node), "", node);
                run_node_checks(self, st, std::move(acts));
              },
              [self, st, node](const caf::error& e) {
                run_node_checks(self, st, st->node_checks->on_no_report(node, self->system().render(e)));
              });
    } else if (auto* p = std::get_if<nc::ask_pair>(&a)) {
      const auto& s = st->preflight->settings;
      for (const bool dial : {false, true}) {
        const auto node = dial ? p->dialer : p->listener;
        const auto pair = p->pair;
        msg::node_pair_probe probe{pair, dial ? p->listener : p->dialer,
                                   dial ? p->listener_address : p->dialer_address, dial, s.pair_elements, s.pair_rounds};
        const auto it = st->agents.find(node);
        if (it == st->agents.end()) {
          run_node_checks(self, st, st->node_checks->on_pair_result(pair, node, 0, "the agent is gone"));
          continue;
        }
        self->request(it->second, pair_probe_timeout, std::move(probe))
            .then(
                [self, st, node](const msg::node_pair_result& r) {
                  run_node_checks(self, st, st->node_checks->on_pair_result(r.pair, node, r.median_ms, r.error));
                },
                [self, st, node, pair](const caf::error& e) {
                  run_node_checks(self, st, st->node_checks->on_pair_result(pair, node, 0, self->system().render(e)));
                });
      }
    } else if (auto* ad = std::get_if<nc::admit>(&a)) {
      // A held agent is still connected: its loss erases it here.
      const auto it = st->held_agents.find(ad->node);
      if (it == st->held_agents.end()) continue;
      const auto hello = it->second;
      st->held_agents.erase(it);
      admit_agent(self, *st, hello);
    } else if (auto* r = std::get_if<nc::refuse>(&a)) {
      journal(*st, "node_refused", r->node + " failed its pre-flight and gets no rank: " + r->reason, "", r->node);
    } else if (auto* d = std::get_if<nc::done>(&a)) {
      if (st->preflight->on_report) st->preflight->on_report(d->report);
      journal(*st, "preflight_nodes",
              "pre-flight of the agents' nodes: " + d->report.value("job_verdict", "?") + " (" + pass_list(d->report) +
                  ")" + (d->failed ? ": " + d->reason : ""));
      if (d->failed) {
        st->preflight_failed = true;
        execute(self, *st, {finish_job{false, "pre-flight failed on an agent's node, no rank was started: " + d->reason}});
        return;
      }
    }
  }
}

caf::behavior orchestrator(metrics::accounted_actor* self, std::shared_ptr<shell_state> st) {
  self->account_as("orchestrator", st->env.metrics ? st->env.metrics->own() : nullptr);
  // Every outcome of a memory fit is a series from the start, at 0 until it happens.
  if (st->env.metrics)
    for (const char* result : {"unfit", "keyframe", "split", "unchanged"})
      st->env.metrics->own()->counter("msomni_memory_fits_total", {{"result", result}});
  self->set_down_handler([self, st](caf::down_msg& d) {
    auto it = st->watched.find(d.source);
    if (it == st->watched.end()) return;
    const auto [is_agent, name] = it->second;
    st->watched.erase(it);
    if (st->done) return;
    const auto now = st->clock.now();
    if (is_agent) {
      st->agents.erase(name);
      st->held_agents.erase(name);  // its pending check answers with an error
      execute(self, *st, st->core.on_agent_down(name, "connection lost: " + caf::to_string(d.reason), now));
    } else if (d.reason != caf::exit_reason::normal) {
      // Its process may live on (its agent reports an exit, and that comes as rank_exited):
      // the core gives it its reconnect window.
      execute(self, *st, st->core.on_rank_unreachable(name, "connection lost: " + caf::to_string(d.reason), now));
    }
  });
  self->delayed_send(self, tick_interval, tick_atom::value);
  return {
      [self, st](const msg::agent_hello& a) {
        auto agent = caf::actor_cast<caf::actor>(self->current_sender());
        if (!agent) return;
        st->agents[a.node] = agent;
        self->monitor(agent);
        st->watched[agent.address()] = {true, a.node};
        if (st->node_checks && a.node != st->env.in_process_agent) {
          st->held_agents[a.node] = a;  // its node is checked first
          if (!st->gather_armed) {
            st->gather_armed = true;
            self->delayed_send(self, st->agent_gather, gather_atom::value);
          }
          run_node_checks(self, st, st->node_checks->on_agent(a.node));
          return;
        }
        admit_agent(self, *st, a);
      },
      // From a node agent whose processes the cluster's engine signalled: a stop as if this
      // process had received the signal. From an agent of this job only, and the first counts.
      [self, st](const msg::agent_signalled& a) {
        const auto agent = st->agents.find(a.node);
        if (agent == st->agents.end() || agent->second.address() != caf::actor_cast<caf::actor_addr>(self->current_sender())) {
          MSOMNI_LOG(warn, "orchestrator") << "agent_signalled from " << a.node << " dropped: not that node's agent";
          return;
        }
        if (a.signal != SIGTERM && a.signal != SIGINT) {
          MSOMNI_LOG(warn, "orchestrator") << "agent_signalled from " << a.node << " dropped: signal " << a.signal
                                           << " is not a stop signal";
          return;
        }
        if (st->agent_signal != 0) return;
        st->agent_signal = a.signal;
        st->agent_signal_from = "node " + a.node + "'s agent" + (a.source.empty() ? "" : " (from " + a.source + ")");
      },
      // From a node agent, every heartbeat_interval_s; idempotent (the core keeps the latest).
      [st](const msg::heartbeat& h) { st->core.on_heartbeat(h.node, st->clock.now()); },
      [self, st](const msg::rank_ready& r) {
        caf::actor w;
        try {
          w = st->env.worker_of(r.name);
        } catch (const std::exception& e) {
          execute(self, *st, st->core.on_rank_down(r.name, std::string("unreachable: ") + e.what(), st->clock.now()));
          return;
        }
        st->workers[r.name] = w;
        self->monitor(w);
        st->watched[w.address()] = {false, r.name};
        execute(self, *st, st->core.on_rank_ready(r, st->clock.now()));
      },
      // From a rank of the previous leader that trained on while the job had no leader.
      [self, st](const msg::rank_rejoin& r) {
        if (st->done) return;
        caf::actor w;
        try {
          w = st->env.worker_of(r.name);
        } catch (const std::exception& e) {
          MSOMNI_LOG(warn, "orchestrator") << "rank_rejoin from " << r.name << " dropped: unreachable: " << e.what();
          return;
        }
        // A member reconnecting: its old connection's end is no news any more.
        if (const auto old = st->workers.find(r.name); old != st->workers.end() && old->second != w) {
          st->watched.erase(old->second.address());
          self->demonitor(old->second);
        }
        st->workers[r.name] = w;
        self->monitor(w);
        st->watched[w.address()] = {false, r.name};
        execute(self, *st, st->core.on_rank_rejoin(r, st->clock.now()));
      },
      [self, st](msg::step_record r) {
        r.loss = msg::value_of(r.loss, r.loss_kind);
        r.grad_norm = msg::value_of(r.grad_norm, r.grad_norm_kind);
        auto released = st->lineage.on_record(r);
        for (const auto& h : released.held) journal_step(self, *st, h);
        if (released.record) journal_step(self, *st, *released.record);
      },

      // From a rank leaving (idempotent: a second report of a departed rank changes nothing).
      // A reason starting "failed: " is a rank that cannot go on (every rank decided the same
      // after the same step, e.g. its checkpoints kept failing): the job ends with that reason.
      [self, st](const msg::rank_left& r) {
        if (st->done) return true;
        if (st->env.memory_predictor) self->send(st->env.memory_predictor, r);  // its forecast goes
        for (const auto& h : st->lineage.on_rank_left(r)) journal_step(self, *st, h);
        if (r.reason.rfind("failed: ", 0) == 0) {
          std::vector<action> end;
          for (const auto& [name, m] : st->core.members())
            if (m.state != member_state::left && m.state != member_state::dead && name != r.name)
              end.push_back(stop_on_agent{m.node, name, "the job failed"});
          end.push_back(finish_job{false, r.name + " " + r.reason + " (after step " + std::to_string(r.final_step) + ")"});
          execute(self, *st, std::move(end));
          return true;
        }
        execute(self, *st, st->core.on_rank_left(r, st->clock.now()));
        return true;
      },
      [st](const msg::bad_samples_seen& m) {
        for (auto& note : st->bad_ledger.on_seen(m)) journal(*st, "bad_sample", note);
      },
      [st](const msg::checkpoint_done& d) {
        if (st->control) st->control->on_checkpoint(d);
        st->tally.on_checkpoint(d.step, d.ok);
        char mb[32];
        std::snprintf(mb, sizeof mb, "%.2f", static_cast<double>(d.bytes) / (1 << 20));
        if (d.ok) journal(*st, "checkpoint", "step " + std::to_string(d.step) + " committed (" + mb + " MiB over all shards)");
        else journal(*st, "checkpoint_failed", "step " + std::to_string(d.step) + " not committed: " + d.error +
                                                   "; the previous checkpoint stays");
      },
      [self, st](const msg::rank_stalled& r) { execute(self, *st, st->core.on_rank_stalled(r, st->clock.now())); },
      // From a rank that cannot go on, before it exits; idempotent (the core ignores a rank
      // already down). Acknowledged so the rank knows its reason arrived.
      [self, st](const msg::rank_failed& r) {
        if (!st->done) execute(self, *st, st->core.on_rank_failed(r, st->clock.now()));
        return true;
      },
      [self, st](const msg::rank_exited& r) {
        const auto it = st->core.members().find(r.name);
        const bool known = it != st->core.members().end();
        // Nothing to recover once a rank has left (it gave its result), but a death by a
        // signal then is still a failure of that process, told and journaled.
        if (known && r.status < 0 && it->second.state == member_state::left) {
          const std::string what = r.name + " died by signal " + std::to_string(-r.status) + " (" + strsignal(-r.status) +
                                   ") after its result" + (r.log_tail.empty() ? "" : "; log ends: " + r.log_tail);
          journal(*st, "rank_crashed", what);
          if (st->env.on_rank_crash) st->env.on_rank_crash(what);
        }
        if (st->done) return;  // the job is over; ranks exiting now are not failures to recover from
        if (st->env.memory_predictor) self->send(st->env.memory_predictor, r);
        if (!known) return;
        const auto state = it->second.state;
        if (state == member_state::left || state == member_state::dead) return;
        const std::string why = r.status < 0 ? "killed by signal " + std::to_string(-r.status)
                                             : "exited with status " + std::to_string(r.status) + " without leaving";
        execute(self, *st, st->core.on_rank_down(r.name, why + (r.log_tail.empty() ? "" : "; log ends: " + r.log_tail),
                                                 st->clock.now()));
      },
      [self, st](const msg::control_request& r) { return handle_control(self, *st, r); },
      [st](const msg::metrics_report& r) { take_report(*st, r); },
      // From every rank after each step and while one runs; not acknowledged. A repeated one
      // writes its line again (the trace marks it "resume"); a malformed or foreign one is dropped.
      [self, st](const msg::memory_sample& s) {
        if (st->done) return;
        const auto taken = st->memory->take(s, st->core.members(), st->core.epoch());
        if (taken == memory_hook::outcome::journal_failed)
          execute(self, *st, {finish_job{false, st->memory->failure() + "; stopping rather than training without a record"}});
        else if (taken == memory_hook::outcome::accepted && st->env.memory_predictor && !s.in_step)
          self->send(st->env.memory_predictor, s);
      },
      // From the memory watermark predictor: a coming step of a rank will not fit; on to the rank.
      [self, st](const msg::memory_fit& f) {
        if (st->done) return;
        if (auto it = st->workers.find(f.rank_name); it != st->workers.end()) self->send(it->second, f);
      },
      // From a rank: what a step did under its memory fit request. Journaled (every one: a resume
      // replays them) and kept for a rollback in this process.
      [st](const msg::memory_fit_done& d) {
        if (st->done) return;
        st->env.fit_replay->record(d.fit);
        count_fit(*st, !d.fits ? "unfit" : d.keyframe_cuts > 0 ? "keyframe" : d.micro_batches_split > 0 ? "split" : "unchanged");
        event_context ctx;
        ctx.step = d.fit.step;
        ctx.epoch = d.epoch;
        ctx.rank = d.fit.rank_name;
        ctx.fields = memory_fit_fields(d);
        char gb[96];
        std::snprintf(gb, sizeof gb, "forecast %.3f GB over the budget %.3f GB; ran ", d.fit.forecast_bytes / 1e9,
                      d.fit.budget_bytes / 1e9);
        const auto detail = "step " + std::to_string(d.fit.step) + (d.fit.replay ? " (replayed)" : "") + ": " + gb + d.detail +
                            "; peak " + std::to_string(d.peak_bytes) + " B";
        if (st->env.journal) st->env.journal->event("memory_fit", detail, ctx);
        remember_memory_event(*st, "memory_fit", detail, d.fit.step, d.fit.rank_name);
        if (st->control) st->control->on_event("memory_fit", detail);
      },
      // From the memory watermark predictor: journaled (the first memory_advice_journaled_max,
      // then counted only; the predictor sends advice only when it is news).
      [st](const msg::memory_advice& a) {
        if (st->done) return;
        remember_memory_event(*st, "memory_advice", a.rank_name + ": " + a.reason, a.step, a.rank_name);
        if (++st->memory_advice_seen > memory_advice_journaled_max) return;
        event_context ctx;
        ctx.step = a.step;
        ctx.epoch = st->core.epoch();
        ctx.rank = a.rank_name;
        ctx.fields = {{"action", a.kind == msg::advice_kind::evict ? "evict" : "reserve"},
                      {"gb", a.gb},
                      {"forecast_gb", a.forecast_gb},
                      {"fits", a.fits},
                      // what `msomni job` reports to msomni-sched: forecast + margin of the device
                      {"margin_gb", st->env.memory.safety_margin_gb},
                      {"device_gb", st->env.memory.device_memory_gb}};
        const auto detail = a.rank_name + ": " + a.reason;
        if (st->env.journal) st->env.journal->event("memory_advice", detail, ctx);
        if (st->control) st->control->on_event("memory_advice", detail);
      },
      // The initial node check goes on without the listed nodes whose agent never came.
      [self, st](gather_atom) {
        if (st->done || !st->node_checks) return;
        auto acts = st->node_checks->on_gather_deadline();
        for (const auto& node : st->node_checks->missing())
          journal(*st, "node_missing",
                  node + " is listed in [[cluster.nodes]] but its agent did not join within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(st->agent_gather).count()) +
                      " s of the first; the pre-flight goes on without it (it is checked when it joins)",
                  "", node);
        run_node_checks(self, st, std::move(acts));
      },
      [self, st](tick_atom) {
        stop_if_journal_failed(self, *st);
        if (st->done) return;
        const auto now = st->clock.now();
        // Ticks come every tick_interval; a gap past own_pause_limit is this process standing
        // still, and its peers' silence in it is not theirs.
        if (st->last_tick && now - *st->last_tick > own_pause_limit(st->env.agent_silence_limit))
          execute(self, *st, st->core.on_own_pause(now - *st->last_tick - tick_interval, now));
        st->last_tick = now;
        const bool deposed = st->env.deposed && *st->env.deposed;
        const bool own_signal = st->env.stop_signal && *st->env.stop_signal;
        if (deposed && st->env.ranks_follow_leader && !st->stop_sent) {
          // The ranks train on and follow the next leader, which adopts them: nothing is sent
          // to them from here any more.
          st->stop_sent = true;
          st->stop_by_deposition = true;
          const std::string why = st->env.deposed_why && !st->env.deposed_why->empty() ? *st->env.deposed_why
                                                                                        : "the job's leadership was lost";
          journal(*st, "deposed", "this control process no longer leads the job (" + why +
                                      "); the ranks train on and rejoin the job's next leader");
          execute(self, *st, {finish_job{true, "deposed: the ranks train on under the next leader", true}});
          return;
        }
        if ((own_signal || deposed || st->agent_signal != 0) && !st->stop_sent) {
          auto o = st->core.stop(now);
          if (o.ok) {
            st->stop_sent = true;
            const int sig = own_signal && st->env.stop_signal_number ? st->env.stop_signal_number->load()
                            : own_signal                             ? 0
                                                                     : st->agent_signal;
            st->stop_by_deposition = deposed;
            st->stop_by_sigterm = !deposed && sig == SIGTERM;
            const std::string at = !own_signal && !deposed ? " at " + st->agent_signal_from : "";
            const std::string name = deposed           ? "the loss of the job's leadership (another control process leads it)"
                                     : sig == SIGTERM ? "SIGTERM" + at + " (a preemption)"
                                     : sig == SIGINT  ? "SIGINT" + at
                                                      : "a stop signal";
            journal(*st, "stop", name + " received: " + o.text);
            execute(self, *st, std::move(o.actions));
          }
        }
        execute(self, *st, st->core.on_tick(now));
        if (st->env.release_node)
          for (const auto& node : st->core.idle_nodes()) {
            if (!st->release_tried.insert(node).second) continue;
            const auto err = st->env.release_node(node);
            if (!err.empty()) {
              journal(*st, "node_release_failed", node + " holds no rank but stays with the job: " + err, "", node);
              continue;
            }
            journal(*st, "node_released", node + " holds no rank after the scale-down and was given back to the cluster", "", node);
            execute(self, *st, st->core.on_agent_released(node));
          }
        if (st->control) st->control->on_status(st->core.status(), st->core.recoveries());
        forget_departed_sources(*st);
        self->delayed_send(self, tick_interval, tick_atom::value);
      },
  };
}

}  // namespace

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

caf::actor spawn_orchestrator(caf::actor_system& sys, elastic_settings s, orchestrator_env env,
                              std::optional<node_preflight> node_checks) {
  s.agent_silence_limit = env.agent_silence_limit;
  s.in_process_agent = env.in_process_agent;
  s.reconnect_window = env.reconnect_window;
  auto st = std::make_shared<shell_state>(s, std::move(env));
  if (node_checks) {
    st->node_checks = std::make_unique<health::node_check_core>(node_checks->settings, node_checks->control_report);
    st->preflight = std::move(node_checks);
  }
  return sys.spawn(orchestrator, st);
}

}  // namespace msomni::orchestrator
