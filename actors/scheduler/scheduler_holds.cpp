// Why jobs wait and free GPUs stay unused: the hold reasons a pass records, the cluster's
// hold after it, and why critical hosts lend nothing. Each is logged as a hold command only
// when its reason changes, so that a reason that lasts is one line, not one per pass.
#include "scheduler_core.hpp"

#include <algorithm>

namespace msomni::sched {

hold_note scheduler_core::hold_of(const job_state& j) const {
  if (j.phase == job_phase::guest) return {};  // placed after the pass that held it
  if (j.hold_pass == pass_) return j.hold;
  if (j.phase == job_phase::pending) return tail_hold_;
  return {};
}

hold_note scheduler_core::lending_hold_note(const std::string& host) const {
  hold_note h;
  h.reason = lending_hold_of(host);
  if (h.reason == hold_reason::none) return h;
  h.gpus_free = place_.free_count();
  h.by = host;
  h.lending = lending_figures_of(host);
  return h;
}

void scheduler_core::emit_hold(double now_s, const std::string& job, uint64_t epoch, const hold_note& h,
                               std::vector<command>& out, const std::string& prefix) {
  ++holds_total_;
  command c = make_command(command_kind::hold, job, epoch);
  explained e = hold_explained(h);
  e.text = prefix + e.text;
  set_reason(c, std::move(e));
  c.host = h.by;
  // Not a decision (decisions_total): the log keeps it, the shell prints it, nothing acts.
  if (params_.decision_log_capacity > 0) {
    if (log_.size() >= params_.decision_log_capacity) log_.pop_front();
    log_.push_back({now_s, c});
  }
  out.push_back(std::move(c));
}

void scheduler_core::set_hold(job_state& j, hold_note h, double now_s, std::vector<command>& out) {
  const hold_reason r = h.reason;
  j.hold = std::move(h);
  j.hold_pass = pass_;
  // Only the first jobs held in a pass (in queue order) are logged: a long queue changes its
  // reasons together, and the jobs in front explain those behind them.
  const bool logged =
      j.phase != job_phase::pending || r == hold_reason::queue_order || pass_holds_++ < params_.hold_log_jobs;
  if (r == j.hold_logged || !logged) return;
  j.hold_logged = r;
  if (r != hold_reason::queue_order) emit_hold(now_s, j.req.id, j.epoch, j.hold, out);
}

hold_note scheduler_core::waiting_hold(const job_state& j, const pass_state& p) const {
  const uint32_t need = j.req.gpus;
  hold_note h{hold_reason::cluster_full, p.free_now, need, 0, {}};
  if (p.free_now >= need && p.any_blocked) {
    h.reason = hold_reason::queue_order;  // free, but promised to a job in front of it
    h.by = p.first_blocked;
  } else if (p.pool >= need) {
    h.reason = hold_reason::draining;
  } else if (j.req.klass == job_class::critical && params_.policy != policy_kind::exclusive) {
    // What it lacks is held by regular jobs that may not be preempted yet, if any.
    double first_end = -1;
    for (const auto& id : running_) {
      const job_state& v = jobs_.at(id);
      if (v.req.klass != job_class::regular || gives_way_at_once(v) || may_preempt(v, j, last_schedule_s_)) continue;
      const double end = v.run_since_s + params_.min_run_window_s;
      if (first_end < 0 || end < first_end) {
        first_end = end;
        h.by = id;
      }
    }
    if (!h.by.empty()) {
      h.reason = hold_reason::run_window;
      h.window_left_s = std::max(0.0, first_end - last_schedule_s_);
    }
  }
  return h;
}

void scheduler_core::note_cluster_hold(double now_s, std::vector<command>& out) {
  hold_note h;
  std::string job;
  const uint32_t free = place_.free_count();
  if (free > 0 && !pending_.empty()) {
    job = std::get<3>(*pending_.begin());
    h = hold_of(jobs_.at(job));
  } else if (free > 0 && grow_hold_.reason != hold_reason::none) {
    h = grow_hold_;
    job = grow_hold_job_;
  }
  if (h.reason == hold_reason::none && pending_.size() >= params_.queue_capacity) {
    h = {hold_reason::queue_bound, free, static_cast<uint32_t>(pending_.size()), 0, {}};
    h.queue_capacity = params_.queue_capacity;
    job.clear();
  }
  if (h.reason == hold_reason::none) job.clear();
  h.gpus_free = free;
  const bool changed = h.reason != cluster_hold_.reason;
  cluster_hold_ = std::move(h);
  cluster_hold_job_ = std::move(job);
  if (!changed || cluster_hold_.reason == hold_reason::none) return;
  std::string prefix = std::to_string(free) + " GPUs free";
  if (!cluster_hold_job_.empty())
    prefix += ", " + cluster_hold_job_ +
              (jobs_.at(cluster_hold_job_).phase == job_phase::pending ? " waits" : " does not grow");
  prefix += ": ";
  emit_hold(now_s, "", 0, cluster_hold_, out, prefix);
}

void scheduler_core::note_lending(double now_s, std::vector<command>& out) {
  if (params_.policy != policy_kind::omni) return;
  // Only worth a line while preemptible jobs wait for somewhere to run.
  const bool waiting = !pending_.empty() && std::get<0>(*pending_.rbegin()) != static_cast<uint8_t>(job_class::critical);
  for (const auto& id : running_) {
    job_state& h = jobs_.at(id);
    if (h.req.klass != job_class::critical) continue;
    const hold_note note = lending_hold_note(id);
    const hold_reason r = note.reason;
    const lending_cause cause = lending_cause_of(note.lending, r);
    h.lending_hold = r;
    if (!waiting || (r == h.lending_logged && cause == h.lending_cause_logged)) continue;
    h.lending_logged = r;
    h.lending_cause_logged = cause;
    if (r != hold_reason::none) emit_hold(now_s, id, h.epoch, note, out);
  }
}

}  // namespace msomni::sched
