// greedy: jobs start at full size in queue order; a job that does not fit takes GPUs from
// lower classes (ignoring their run window) and anything behind it that fits fills in,
// except that nothing below a waiting critical job starts. Running jobs never grow.
#include "scheduler_core.hpp"

namespace msomni::sched {

void scheduler_core::schedule_greedy(double now_s, std::vector<command>& out) {
  pass_state p = pass_begin();
  // start() erases only the entry being looked at, so step past it first.
  for (auto it = pending_.begin(), next = it; it != pending_.end(); it = next) {
    ++next;
    job_state& j = jobs_.at(std::get<3>(*it));
    if (p.critical_blocked && j.req.klass != job_class::critical) {
      tail_hold_ = {hold_reason::queue_order, p.free_now, 0, 0, p.first_critical_blocked};
      return;
    }
    if (start_if_fits(j, p, now_s, out)) continue;
    reclaim_shortfall(j, p, now_s, out);
    set_hold(j, waiting_hold(j, p), now_s, out);
    block(j, p);
  }
}

}  // namespace msomni::sched
