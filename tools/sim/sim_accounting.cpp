// msomni-sim's accounting of shared and idle GPU time: guest progress against what its host
// really left idle, where critical idle time went per window, and the timeline rows.
#include "sim_state.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace msomni::sim {

using namespace msomni::sched;

// Guest progress over [credited_until, until]: it gets its share of the host's GPUs unless
// the host needed more than it actually left idle -- then the host waited for the guest's
// eviction (critical slowdown) and the guest's slice is lost work.
void engine::credit_guest(sjob& g, double until) {
  sjob& h = jobs_[g.host];
  double w = until - g.credited_until;
  g.credited_until = until;
  if (w <= 0) return;
  if (g.share > h.cur_idle + 1e-12) {
    // Guests of one host sit on disjoint GPUs of the same job, so the host waits once for
    // their eviction however many overstayed.
    double from = std::max(until - w, h.shortfall_until);
    if (until > from) {
      double delay = (g.share - h.cur_idle) * (until - from);
      settle(h);
      h.remaining_s += delay;
      h.progress_s -= delay;
      h.colocation_delay_s += delay;
      reschedule(h);
      h.shortfall_until = until;
    }
    lost_gpu_s_ += h.cur_idle * w * g.t.gpus;
    ++result_.guest_shortfalls;
    return;
  }
  double gain = g.share * opt_.share_efficiency * w;
  gain = std::min(gain, g.remaining_s);
  g.progress_s += gain;
  g.remaining_s -= gain;
  g.last_ckpt_s = g.progress_s;  // a guest's state is swapped out at every slice end
  account(until - w, until, g.t.gpus * g.share * opt_.share_efficiency, busy_gpu_s_);
  account(until - w, until, g.t.gpus * g.share * opt_.share_efficiency, guest_busy_gpu_s_);
}

// Where the idle time of the window now starting goes (sim_result::idle_split): a
// diagnostic at the window's start; guests that leave inside the window are not followed.
void engine::split_idle(double w) {
  if (opt_.policy == policy_kind::exclusive) return;
  std::map<size_t, double> guest_gpus;
  for (size_t gi : guests_) guest_gpus[jobs_[gi].host] += jobs_[gi].t.gpus;
  auto& s = idle_split_gpu_s_;
  const auto queued = core_.counts();
  const bool none_waiting = queued.pending_by_class[static_cast<size_t>(job_class::regular)] +
                                queued.pending_by_class[static_cast<size_t>(job_class::best_effort)] ==
                            0;
  for (size_t i : active_) {
    const sjob& h = jobs_[i];
    if (h.klass != job_class::critical || !h.running || h.cur_idle <= 0) continue;
    double idle = h.cur_idle * h.held * w;
    double share = core_.guest_share(sim_key(h));
    if (share <= 0) {
      const auto why = core_.lending_of(sim_key(h));
      if (why == scheduler_core::lending::over_budget) {
        s.over_budget += idle;
      } else if (why == scheduler_core::lending::low_confidence) {
        s.low_confidence += idle;
      } else {
        s.below_threshold += idle;
        if (none_waiting) s.below_threshold_queue_empty += idle;
      }
      continue;
    }
    double lent_on = std::min<double>(guest_gpus[i], h.held);
    s.no_guest += h.cur_idle * (h.held - lent_on) * w;
    if (none_waiting) s.no_guest_queue_empty += h.cur_idle * (h.held - lent_on) * w;
    if (share > h.cur_idle + 1e-12) {
      s.overstay_lost += h.cur_idle * lent_on * w;
      continue;
    }
    s.margin += (h.cur_idle - share) * lent_on * w;
    s.guest_busy += share * opt_.share_efficiency * lent_on * w;
    s.efficiency_loss += share * (1 - opt_.share_efficiency) * lent_on * w;
  }
}

void engine::timeline_row() {
  uint32_t alloc = 0, draining = 0;
  for (size_t i : active_) {
    alloc += jobs_[i].held;
    if (jobs_[i].draining) ++draining;
  }
  std::ostringstream row;
  row << now() << ',' << alloc << ',' << active_.size() << ',' << guests_.size() << ','
      << core_.pending_count() << ',' << draining;
  if (rows_.size() < 1000000) rows_.push_back(row.str());
  next_row_ = now() + opt_.timeline_step_s;
}

}  // namespace msomni::sim
