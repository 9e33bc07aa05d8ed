// One scheduling pass over the queue: which policy's pass runs, and the steps every pass
// shares (start what fits, ask lower classes for the rest, mark a job blocked). The passes
// themselves are scheduler_pass_exclusive.cpp, scheduler_pass_greedy.cpp and
// scheduler_pass_omni.cpp.
#include "scheduler_core.hpp"

namespace msomni::sched {

void scheduler_core::schedule(double now_s, std::vector<command>& out) {
  last_schedule_s_ = now_s;
  ++pass_;
  pass_holds_ = 0;
  tail_hold_ = {};
  grow_hold_ = {};
  grow_hold_job_.clear();
  switch (params_.policy) {
    case policy_kind::omni: schedule_omni(now_s, out); break;
    case policy_kind::exclusive: schedule_exclusive(now_s, out); break;
    case policy_kind::greedy: schedule_greedy(now_s, out); break;
  }
  note_cluster_hold(now_s, out);
}

scheduler_core::pass_state scheduler_core::pass_begin() const {
  pass_state p;
  p.free_now = place_.free_count();
  p.pool = static_cast<int64_t>(p.free_now) + draining_gpus();
  return p;
}

bool scheduler_core::start_if_fits(job_state& j, pass_state& p, double now_s, std::vector<command>& out) {
  const uint32_t need = j.req.gpus;
  const int64_t usable = p.usable();
  if (usable < need) return false;
  reason_text why(p.any_blocked ? "backfill: fits in free GPUs behind a blocked job (needs " : "fits in free GPUs (needs ");
  why.num("gpus_wanted", need).add(" of ").num("gpus_free", static_cast<double>(usable));
  why.add(p.any_blocked ? " free that " + p.first_blocked + " was not promised)" : " free)");
  start(j, full_replicas(j.req), now_s, std::move(why).done(), out);
  p.free_now -= need;
  p.pool -= need;
  return true;
}

void scheduler_core::reclaim_shortfall(const job_state& j, pass_state& p, double now_s, std::vector<command>& out) {
  const uint32_t need = j.req.gpus;
  if (p.pool < need)
    p.pool += reclaim(j, static_cast<uint32_t>(need - std::max<int64_t>(p.pool, 0)), now_s, out, victims::any);
}

void scheduler_core::block(const job_state& j, pass_state& p) {
  p.pool -= j.req.gpus;
  if (!p.any_blocked) p.first_blocked = j.req.id;
  p.any_blocked = true;
  if (j.req.klass == job_class::critical && !p.critical_blocked) {
    p.critical_blocked = true;
    p.first_critical_blocked = j.req.id;
  }
}

}  // namespace msomni::sched
