// Taking GPUs back: which running jobs a claimant may preempt or shrink, choosing the
// cheapest victims, notices with a drain period, and the end of a drain (released by the
// job, or forced at its deadline).
#include "scheduler_core.hpp"

#include <algorithm>
#include <tuple>

namespace msomni::sched {

bool scheduler_core::may_preempt(const job_state& v, const job_state& claimant, double now_s) const {
  if (v.phase != job_phase::running || v.req.klass <= claimant.req.klass) return false;
  if (params_.policy == policy_kind::greedy) return true;  // greedy ignores the run window
  if (gives_way_at_once(v)) return true;
  return now_s - v.run_since_s >= params_.min_run_window_s;
}

bool scheduler_core::may_shrink(const job_state& v, const job_state& claimant) const {
  return params_.policy == policy_kind::omni && v.phase == job_phase::running && !v.borrowed &&
         v.req.klass > claimant.req.klass && v.replicas > v.req.min_replicas;
}

uint32_t scheduler_core::gpus_giving_way(const std::set<std::string>& ids) const {
  uint32_t n = 0;
  for (const auto& id : ids) {
    const job_state& j = jobs_.at(id);
    if (gives_way_at_once(j)) n += static_cast<uint32_t>(j.gpus.size());
  }
  return n;
}

uint32_t scheduler_core::reclaim(const job_state& claimant, uint32_t deficit, double now_s,
                                 std::vector<command>& out, victims which) {
  // Plan first: cheapest victims first (best-effort, then borrowed regular runs, then
  // shrinking regular jobs that keep running, then whole regular jobs past their run
  // window), newest first within a kind so the least work is put at risk.
  struct cand { int kind; double since; std::string id; uint32_t gain; uint32_t keep; };
  std::vector<cand> cands;
  if (claimant.req.klass == job_class::best_effort) return 0;  // nothing ranks below it
  for (const auto& id : running_) {
    const job_state& v = jobs_.at(id);
    uint32_t held = static_cast<uint32_t>(v.gpus.size());
    const bool at_once = gives_way_at_once(v);
    if ((which == victims::at_once && !at_once) || (which == victims::draining && at_once)) continue;
    if (at_once && may_preempt(v, claimant, now_s))
      cands.push_back({v.req.klass == job_class::best_effort ? 0 : 1, -v.run_since_s, id, held, 0});
    else if (may_shrink(v, claimant))
      cands.push_back({2, -v.run_since_s, id, (v.replicas - v.req.min_replicas) * v.req.gpus_per_replica,
                       v.req.min_replicas});
    else if (may_preempt(v, claimant, now_s))
      cands.push_back({3, -v.run_since_s, id, held, 0});
  }
  std::sort(cands.begin(), cands.end(), [](const cand& a, const cand& b) {
    return std::tie(a.kind, a.since, a.id) < std::tie(b.kind, b.since, b.id);
  });
  std::vector<const cand*> chosen;
  uint32_t gained = 0;
  for (const auto& c : cands) {
    if (gained >= deficit) break;
    chosen.push_back(&c);
    gained += c.gain;
  }
  // A regular claimant only disturbs others when that actually makes room; a critical one
  // takes what there is, since every GPU reclaimed now shortens its wait.
  if (gained < deficit && claimant.req.klass != job_class::critical) return 0;
  for (const cand* c : chosen) {
    job_state& v = jobs_.at(c->id);
    reason_text why;
    if (c->keep > 0) why.add("shrink to ").num("keep_replicas", c->keep).add(" replicas for ");
    else why.add("make room for ");
    why.add(std::string(to_string(claimant.req.klass)) + " job " + claimant.req.id + " (it lacks ");
    why.num("gpus_short", deficit).add(" GPUs; this gives ").num("gpus_given", c->gain);
    // A regular victim's run window: how long it ran against min_run_window_s (greedy ignores it).
    if (c->kind == 3 && v.req.klass == job_class::regular && params_.policy != policy_kind::greedy)
      why.add(", after ").num("run_s", now_s - v.run_since_s, " s").add(" of its ").num(
          "min_run_window_s", params_.min_run_window_s, " s").add(" run window");
    why.add(")");
    notice(v, c->keep, now_s, std::move(why).done(), out);
  }
  return gained;
}

void scheduler_core::notice(job_state& v, uint32_t keep, double now_s, explained reason,
                            std::vector<command>& out) {
  double drain = gives_way_at_once(v) ? params_.best_effort_drain_s : params_.drain_period_s;
  set_phase(v, job_phase::draining);
  v.keep_replicas = keep;
  v.drain_deadline_s = now_s + drain;
  ++v.epoch;
  command c = make_command(command_kind::preempt, v.req.id, v.epoch);
  c.keep_replicas = keep;
  c.drain_s = drain;
  set_reason(c, std::move(reason_text().add(reason).add("; drain ").num("drain_s", drain, " s")).done());
  emit(now_s, std::move(c), out);
}

void scheduler_core::complete_drain(job_state& v, double now_s) {
  uint32_t keep = v.keep_replicas * v.req.gpus_per_replica;
  std::vector<uint32_t> gone(v.gpus.begin() + std::min<size_t>(keep, v.gpus.size()), v.gpus.end());
  place_.give_back(v.req.id, gone);
  v.gpus.resize(std::min<size_t>(keep, v.gpus.size()));
  if (v.keep_replicas > 0) {
    set_phase(v, job_phase::running);  // shrunk, still running: its run window goes on
    v.replicas = v.keep_replicas;
  } else {
    ++v.preemptions;
    to_pending(v);
  }
  v.keep_replicas = 0;
}

std::vector<command> scheduler_core::released(const std::string& job, uint64_t epoch, double now_s) {
  std::vector<command> out;
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.phase != job_phase::draining || it->second.epoch != epoch)
    return out;  // repeated or stale: already handled
  complete_drain(it->second, now_s);
  schedule(now_s, out);
  return out;
}

std::vector<command> scheduler_core::expire(double now_s) {
  std::vector<command> out;
  for (const std::string& id : std::vector<std::string>(draining_.begin(), draining_.end())) {
    job_state& v = jobs_.at(id);
    if (v.drain_deadline_s > now_s) continue;
    command c = make_command(command_kind::force_release, id, v.epoch);
    c.keep_replicas = v.keep_replicas;
    const double drain = gives_way_at_once(v) ? params_.best_effort_drain_s : params_.drain_period_s;
    set_reason(c, std::move(reason_text("no job_released within the drain period (")
                                .num("drain_s", drain, " s")
                                .add(")"))
                      .done());
    emit(now_s, std::move(c), out);
    complete_drain(v, now_s);
  }
  schedule(now_s, out);
  return out;
}

double scheduler_core::next_deadline_s() const {
  double best = -1;
  for (const auto& id : draining_) {
    const job_state& v = jobs_.at(id);
    if (best < 0 || v.drain_deadline_s < best) best = v.drain_deadline_s;
  }
  return best;
}

double scheduler_core::next_window_end_s() const {
  if (pending_.empty() || std::get<0>(*pending_.begin()) != static_cast<uint8_t>(job_class::critical) ||
      params_.policy == policy_kind::exclusive)
    return -1;
  double best = -1;
  for (const auto& id : running_) {
    const job_state& j = jobs_.at(id);
    if (j.req.klass != job_class::regular) continue;
    double end = j.run_since_s + params_.min_run_window_s;
    if (end > last_schedule_s_ && (best < 0 || end < best)) best = end;
  }
  return best;
}

}  // namespace msomni::sched
