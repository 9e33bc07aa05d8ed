// Carries out the elastic core's actions: plans to the ranks' workers (with the memory fit
// replays a restoring plan needs), spawns and stops through the node agents, journal lines,
// answers to rejoining ranks, and the end of the job (see orchestrator_state.hpp).
#include "orchestrator_state.hpp"

#include "rank_process.hpp"

#include <algorithm>

namespace msomni::orchestrator::shell {

namespace {

// Before a plan that restores a checkpoint: the memory fit decisions of `member`'s slot for the
// steps after the checkpoint, so the steps it runs again are fitted as they were (sent first,
// they are in the rank's inbox before the plan starts its steps).
void send_fit_replays(actor self, shell_state& st, const msg::worker_actor& worker, const msg::join_world& plan,
                      const std::string& member) {
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

void send(actor self, shell_state& st, const send_plan& p) {
  const bool restores = p.plan.source == msg::state_source::checkpoint;
  if (restores && st.env.latest_checkpoint_step) {
    st.lineage.on_rollback_plan(p.plan.epoch);
    const auto from = st.env.latest_checkpoint_step();
    const auto reached = st.progress.last_step();
    st.data.rollback();
    if (st.progress.rollback_to(from) && st.env.journal)
      st.env.journal->begin_attempt(from, "rolled back from step " + std::to_string(reached) +
                                              " to the last checkpoint; steps " + std::to_string(from + 1) + ".." +
                                              std::to_string(reached) + " are repeated (fewer if the ranks commit a "
                                              "checkpoint at this barrier; their JOINED lines name the step they load)");
  }
  for (const auto& to : p.to)
    if (auto it = st.workers.find(to); it != st.workers.end()) {
      if (restores) send_fit_replays(self, st, it->second, p.plan, to);
      self->send(it->second, p.plan);
    }
}

void spawn(actor self, shell_state& st, const spawn_on_agent& s) {
  auto it = st.agents.find(s.node);
  if (it == st.agents.end()) {
    execute(self, st, st.core.on_rank_down(s.name, "no agent on node " + s.node, st.clock.now()));
    return;
  }
  self->send(it->second, msg::spawn_rank{s.name, st.env.rank_args(s.name)});
}

// A rank this process adopted is not its agent's child: a stop reaches it by its pid, on the
// node of the in-process agent (where the previous leader started it).
void stop(actor self, shell_state& st, const stop_on_agent& k) {
  if (auto it = st.agents.find(k.node); it != st.agents.end()) self->send(it->second, msg::stop_rank{k.name, k.reason});
  if (!st.core.adopted() || k.node != st.env.in_process_agent) return;
  if (const auto it = st.core.members().find(k.name); it != st.core.members().end())
    kill_rank_process(it->second.pid, k.name);
}

void answer(actor self, shell_state& st, const answer_rejoin& r) {
  const auto it = st.workers.find(r.name);
  if (it == st.workers.end()) return;
  // An adopted rank's records after what metrics.jsonl holds come again: written once. A
  // member that reconnected to this process sends again what this process did not journal.
  const auto recorded = r.in_place ? st.progress.last_step() : st.env.recorded_step;
  if (r.adopted && !r.in_place) st.progress.resume_after(recorded);
  self->send(it->second, msg::rejoin_answer{r.adopted, recorded, r.reason});
  if (!r.adopted) {  // it leaves: its end is no failure
    st.watched.erase(it->second.address());
    st.workers.erase(it);
  }
}

// The job's end: its event, the end-of-job lines, and the outcome to on_finish, once.
void finish(shell_state& st, const finish_job& f) {
  if (st.done) return;
  st.done = true;
  journal(st, !f.ok ? "job_failed" : f.stopped ? "job_stopped" : "job_finished", f.reason);
  const auto latest = st.env.latest_checkpoint_step ? st.env.latest_checkpoint_step() : 0;
  if (st.progress.bad_samples_total() > 0) journal(st, "bad_samples_total", st.progress.bad_samples_summary());
  if (auto n = st.data.finish()) journal(st, n->kind, n->detail);
  if (st.data.downgraded_total() > 0 || st.data.slow_steps() > 0) journal(st, "data_summary", st.data.summary());
  job_outcome out;
  out.ok = f.ok;
  out.stopped = f.stopped;
  out.preempted = f.stopped && st.stops.by_sigterm();
  out.deposed = f.stopped && st.stops.by_deposition();
  out.preflight_failed = st.preflight_failed;
  out.reason = f.reason;
  out.text = f.reason + "\n  " + st.progress.summary() + "\n  " + st.progress.bad_samples_summary() + "; " +
             health_summary(st) + "\n  " + st.data.summary() + "\n  " +
             (latest ? "last checkpoint: step " + std::to_string(latest) : std::string("no checkpoint committed"));
  out.facts = st.tally.facts(st.progress.last_step(), st.progress.bad_samples_by_reason(), st.data.downgraded_total(),
                             st.data.slow_steps());
  out.facts.bad_sample_list = st.bad_ledger.entries();
  out.facts.bad_samples_unlisted_draws = st.bad_ledger.unlisted_draws();
  out.facts.mismatched_names = st.progress.mismatched_names();
  if (st.env.on_finish) st.env.on_finish(out);
}

// A deposed leader whose ranks follow the job's leader tells them nothing more and starts no
// rank: they belong to the next leader (what happened in between is still journaled).
bool handed_over(const shell_state& st, const action& a) {
  return st.env.ranks_follow_leader && st.env.deposed && *st.env.deposed &&
         (std::holds_alternative<send_plan>(a) || std::holds_alternative<spawn_on_agent>(a) ||
          std::holds_alternative<answer_rejoin>(a));
}

void execute_one(actor self, shell_state& st, const action& a) {
  if (handed_over(st, a)) return;
  if (auto* p = std::get_if<send_plan>(&a)) send(self, st, *p);
  else if (auto* s = std::get_if<spawn_on_agent>(&a)) spawn(self, st, *s);
  else if (auto* k = std::get_if<stop_on_agent>(&a)) stop(self, st, *k);
  else if (auto* e = std::get_if<journal_event>(&a)) journal(st, e->kind, e->detail, e->rank, e->node, e->numbers);
  else if (auto* r = std::get_if<answer_rejoin>(&a)) answer(self, st, *r);
  else if (auto* f = std::get_if<finish_job>(&a)) finish(st, *f);
}

}  // namespace

void execute(actor self, shell_state& st, std::vector<action> acts) {
  for (const auto& a : acts) execute_one(self, st, a);
}

}  // namespace msomni::orchestrator::shell
