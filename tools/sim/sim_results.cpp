// msomni-sim: one replay of the trace to its end and its final numbers, and the run of the
// same critical jobs alone that critical_slowdown compares against.
#include "sim_state.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::sim {

using namespace msomni::sched;

namespace {
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}
}  // namespace

sim_result engine::run() {
  for (size_t i = 0; i < jobs_.size(); ++i)
    clk_.schedule_at(at(jobs_[i].t.submit_s), [this, i] { arrive(i); });
  while (clk_.run_next()) ++result_.events;
  sim_result& r = result_;
  r.sim_end_s = now();
  double capacity = static_cast<double>(core_.gpus().total()) * (t1_ - t0_);
  r.allocated_utilization = allocated_gpu_s_ / capacity;
  r.busy_utilization = busy_gpu_s_ / capacity;
  r.free_while_waiting_utilization = free_waiting_gpu_s_ / capacity;
  r.critical_idle_utilization = critical_idle_gpu_s_ / capacity;
  r.guest_busy_utilization = guest_busy_gpu_s_ / capacity;
  const auto& s = idle_split_gpu_s_;
  r.idle_split = {s.guest_busy / capacity,      s.efficiency_loss / capacity, s.overstay_lost / capacity,
                  s.margin / capacity,          s.no_guest / capacity,        s.below_threshold / capacity,
                  s.low_confidence / capacity,  s.over_budget / capacity,     s.no_guest_queue_empty / capacity,
                  s.below_threshold_queue_empty / capacity};
  r.lost_work_gpu_hours = lost_gpu_s_ / 3600.0;
  r.preempted_gpu_hours_lost = (lost_gpu_s_ + drain_gpu_s_ + restart_gpu_s_) / 3600.0;
  r.decisions = core_.decisions_total();
  r.cross_switch = core_.cross_switch_placements();
  r.multi_node = core_.multi_node_placements();
  r.reserve_deferrals = core_.reserve_deferrals();
  r.budget_holds = core_.budget_holds();
  std::map<std::string, std::vector<double>> jct;
  std::vector<double> slow, slow_queue, slow_coloc;
  for (const sjob& j : jobs_) {
    if (j.ever_preempted && !j.done) ++r.unresumed_preempted;
    if (!j.done || j.completion < 0) continue;
    auto& cs = r.per_class[to_string(j.klass)];
    ++cs.completed;
    jct[to_string(j.klass)].push_back(j.completion - j.t.submit_s);
    if (j.klass == job_class::critical) {
      r.critical_jct_s[std::to_string(j.trace_pos)] = j.completion - j.t.submit_s;
      slow.push_back((j.completion - j.t.submit_s) / j.t.duration_s - 1.0);
      slow_queue.push_back((j.first_start - j.t.submit_s) / j.t.duration_s);
      slow_coloc.push_back(j.colocation_delay_s / j.t.duration_s);
      r.critical_queue_wait_s += j.first_start - j.t.submit_s;
      r.critical_colocation_delay_s += j.colocation_delay_s;
    }
  }
  for (auto& [k, v] : jct) {
    r.per_class[k].jct_mean_s = mean(v);
    r.per_class[k].jct_p95_s = percentile(v, 0.95);
  }
  r.critical_slowdown_empty_cluster = mean(slow);
  r.critical_queue_slowdown = mean(slow_queue);
  r.critical_colocation_slowdown = mean(slow_coloc);
  r.critical_colocation_slowdown_max = slow_coloc.empty() ? 0 : *std::max_element(slow_coloc.begin(), slow_coloc.end());
  if (!opt_.timeline_path.empty()) {
    std::ofstream out(opt_.timeline_path);
    if (!out) throw std::runtime_error(opt_.timeline_path + ": cannot write");
    out << "t_s,allocated_gpus,jobs_holding_gpus,guests,pending,draining\n";
    for (const auto& row : rows_) out << row << '\n';
  }
  return r;
}

sim_result run_simulation(const sim_options& opt, const trace& tr) {
  sim_result r = engine(opt, tr).run();
  if (!opt.critical_baseline || opt.critical_only || r.critical_jct_s.empty()) return r;
  // The same critical jobs (same class draws) alone on the same cluster under the same
  // policy: no lower class, so nothing to lend to, preempt or wait for.
  sim_options alone = opt;
  alone.critical_only = true;
  alone.timeline_path.clear();
  alone.skip_rows = r.rejected_rows;  // a job the run turned away is no competitor alone either
  sim_result base = engine(alone, tr).run();
  std::vector<double> slow;
  for (const auto& [id, jct] : r.critical_jct_s) {
    auto it = base.critical_jct_s.find(id);
    if (it != base.critical_jct_s.end() && it->second > 0) slow.push_back(jct / it->second - 1.0);
  }
  r.critical_compared = slow.size();
  r.critical_slowdown = mean(slow);
  r.critical_slowdown_p95 = percentile(slow, 0.95);
  r.critical_slowdown_max = slow.empty() ? 0 : *std::max_element(slow.begin(), slow.end());
  return r;
}

}  // namespace msomni::sim
