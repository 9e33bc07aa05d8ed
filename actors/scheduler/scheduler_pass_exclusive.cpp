// exclusive: strict priority. Jobs start at full size in queue order (class, then
// submission) until the first that does not fit; nothing passes it, nothing is preempted
// or shrunk for it, and running jobs never grow.
#include "scheduler_core.hpp"

namespace msomni::sched {

void scheduler_core::schedule_exclusive(double now_s, std::vector<command>& out) {
  pass_state p = pass_begin();
  // start() erases only the entry being looked at, so step past it first.
  for (auto it = pending_.begin(), next = it; it != pending_.end(); it = next) {
    ++next;
    job_state& j = jobs_.at(std::get<3>(*it));
    if (!start_if_fits(j, p, now_s, out)) {
      set_hold(j, {hold_reason::cluster_full, p.free_now, j.req.gpus, 0, {}}, now_s, out);
      tail_hold_ = {hold_reason::queue_order, p.free_now, 0, 0, j.req.id};
      return;
    }
  }
}

}  // namespace msomni::sched
