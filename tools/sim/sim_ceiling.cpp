// msomni-sim's demand ceiling: a fluid bound on the busy time any policy could reach on the
// trace (sim_result::demand_ceiling_utilization).
#include "sim_state.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace msomni::sim {

using namespace msomni::sched;

namespace {
// A critical job's expected idle share from its drawn timeline: per step, a mean compute of
// step_mean_s (its bubble share idle), a mean data wait of data_wait_share x step_mean_s,
// and its checkpoint/evaluation phases spread over the steps between them.
double expected_idle_share(const sjob& j) {
  const double compute = j.step_mean_s, wait = j.data_wait_share * j.step_mean_s;
  double phase = 0;
  if (j.ckpt_every_steps) phase += j.ckpt_len_s / static_cast<double>(j.ckpt_every_steps);
  if (j.eval_every_steps) phase += j.eval_len_s / static_cast<double>(j.eval_every_steps);
  const double step = compute + wait + phase;
  return step > 0 ? (wait + j.bubble * compute + phase) / step : 0;
}
}  // namespace

// The most busy GPU time the trace allows any policy inside the measurement window. Each
// job that fits the cluster offers work at the rate it has running alone at full size from
// its submission (a critical job busy 1 - its expected idle share of its GPUs): no schedule
// does a job's work sooner than that. A fluid server of the cluster's size does every
// offered GPU-second as soon as capacity allows -- busy at full capacity while a backlog
// waits -- which no real schedule (whole GPUs, gangs, drains, share efficiency) beats.
// Co-location moves work earlier; it creates none.
void engine::demand_ceiling() {
  const double capacity = core_.gpus().total();
  std::vector<std::pair<double, double>> steps;  // (time, change of the offered busy rate)
  for (const sjob& j : jobs_) {
    if (j.t.gpus > capacity || j.t.duration_s <= 0) continue;  // rejected by every policy
    double share = 1;
    if (j.klass == job_class::critical) {
      sjob drawn = j;
      draw_timeline(drawn);
      share = 1 - expected_idle_share(drawn);
    }
    const double rate = j.t.gpus * share;
    steps.emplace_back(j.t.submit_s, rate);
    steps.emplace_back(j.t.submit_s + j.t.duration_s, -rate);
  }
  std::sort(steps.begin(), steps.end());
  double offered = 0, backlog = 0, busy = 0, at = t0_;
  auto serve = [&](double until) {  // from `at` to `until` at the current offered rate
    until = std::min(until, t1_);
    if (until <= at) return;
    double len = until - at;
    if (backlog > 0 && offered < capacity) {  // the backlog drains at capacity - offered
      const double drain = std::min(len, backlog / (capacity - offered));
      busy += capacity * drain;
      backlog -= (capacity - offered) * drain;
      if (backlog < 1e-9) backlog = 0;
      len -= drain;
    }
    if (len > 0) {
      if (backlog > 0 || offered > capacity) {
        busy += capacity * len;
        backlog += (offered - capacity) * len;
      } else {
        busy += offered * len;
      }
    }
    at = until;
  };
  for (const auto& [t, change] : steps) {
    serve(t);
    offered = std::max(0.0, offered + change);
  }
  serve(t1_);
  result_.demand_ceiling_utilization = busy / (capacity * (t1_ - t0_));
}

}  // namespace msomni::sim
