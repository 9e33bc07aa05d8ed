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
    if (!start_if_fits(jobs_.at(std::get<3>(*it)), p, now_s, out)) return;
  }
}

}  // namespace msomni::sched
