// msomni-sim JSON summary: inputs that shaped the run, the headline numbers the issue asks
// for, per-class completion times, and the invariant counters (all must be zero).
#include "sim_engine.hpp"

#include <cstdio>
#include <sstream>

namespace msomni::sim {

namespace {
std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}
}  // namespace

std::string to_json(const sim_options& opt, const sim_result& r) {
  std::ostringstream o;
  o << "{\n";
  o << "  \"trace\": " << quoted(opt.trace_path) << ",\n";
  o << "  \"format\": " << quoted(r.format) << ",\n";
  o << "  \"policy\": " << quoted(sched::to_string(opt.policy)) << ",\n";
  o << "  \"seed\": " << opt.seed << ",\n";
  o << "  \"classes\": " << quoted(opt.classes) << ",\n";
  o << "  \"gpus\": " << r.gpus << ",\n";
  o << "  \"size_rule\": " << quoted(r.size_rule) << ",\n";
  o << "  \"jobs\": " << r.jobs << ",\n";
  o << "  \"measurement_window_s\": " << num(r.window_s) << ",\n";
  o << "  \"allocated_utilization\": " << num(r.allocated_utilization) << ",\n";
  o << "  \"busy_utilization\": " << num(r.busy_utilization) << ",\n";
  o << "  \"free_while_waiting_utilization\": " << num(r.free_while_waiting_utilization) << ",\n";
  o << "  \"demand_ceiling_utilization\": " << num(r.demand_ceiling_utilization) << ",\n";
  o << "  \"critical_idle_utilization\": " << num(r.critical_idle_utilization) << ",\n";
  o << "  \"guest_busy_utilization\": " << num(r.guest_busy_utilization) << ",\n";
  const auto& s = r.idle_split;
  o << "  \"critical_idle_split\": {\"guest_busy\": " << num(s.guest_busy)
    << ", \"efficiency_loss\": " << num(s.efficiency_loss) << ", \"overstay_lost\": " << num(s.overstay_lost)
    << ", \"margin\": " << num(s.margin) << ", \"no_guest\": " << num(s.no_guest)
    << ", \"below_threshold\": " << num(s.below_threshold) << ", \"low_confidence\": " << num(s.low_confidence)
    << ", \"over_budget\": " << num(s.over_budget) << "},\n";
  o << "  \"critical_idle_queue_empty\": {\"no_guest\": " << num(s.no_guest_queue_empty)
    << ", \"below_threshold\": " << num(s.below_threshold_queue_empty) << "},\n";
  o << "  \"critical_slowdown\": " << num(r.critical_slowdown) << ",\n";
  o << "  \"critical_slowdown_p95\": " << num(r.critical_slowdown_p95) << ",\n";
  o << "  \"critical_slowdown_max\": " << num(r.critical_slowdown_max) << ",\n";
  o << "  \"critical_compared\": " << r.critical_compared << ",\n";
  o << "  \"critical_slowdown_empty_cluster\": " << num(r.critical_slowdown_empty_cluster) << ",\n";
  o << "  \"critical_queue_slowdown\": " << num(r.critical_queue_slowdown) << ",\n";
  o << "  \"critical_colocation_slowdown\": " << num(r.critical_colocation_slowdown) << ",\n";
  o << "  \"critical_colocation_slowdown_max\": " << num(r.critical_colocation_slowdown_max) << ",\n";
  o << "  \"critical_queue_wait_s\": " << num(r.critical_queue_wait_s) << ",\n";
  o << "  \"critical_colocation_delay_s\": " << num(r.critical_colocation_delay_s) << ",\n";
  o << "  \"preemptions\": " << r.preemptions << ",\n";
  o << "  \"shrinks\": " << r.shrinks << ",\n";
  o << "  \"forced_releases\": " << r.forced_releases << ",\n";
  o << "  \"colocations\": " << r.colocations << ",\n";
  o << "  \"guest_shortfalls\": " << r.guest_shortfalls << ",\n";
  o << "  \"preempted_gpu_hours_lost\": " << num(r.preempted_gpu_hours_lost) << ",\n";
  o << "  \"lost_work_gpu_hours\": " << num(r.lost_work_gpu_hours) << ",\n";
  o << "  \"rejected\": " << r.rejected << ",\n";
  o << "  \"reserve_deferrals\": " << r.reserve_deferrals << ",\n";
  o << "  \"budget_holds\": " << r.budget_holds << ",\n";
  o << "  \"multi_node_placements\": " << r.multi_node << ",\n";
  o << "  \"cross_switch_placements\": " << r.cross_switch << ",\n";
  o << "  \"decisions\": " << r.decisions << ",\n";
  o << "  \"events\": " << r.events << ",\n";
  o << "  \"sim_end_s\": " << num(r.sim_end_s) << ",\n";
  o << "  \"classes_stats\": {";
  bool first = true;
  for (const auto& [k, c] : r.per_class) {
    o << (first ? "\n" : ",\n") << "    " << quoted(k) << ": {\"submitted\": " << c.submitted
      << ", \"completed\": " << c.completed << ", \"rejected\": " << c.rejected
      << ", \"jct_mean_s\": " << num(c.jct_mean_s) << ", \"jct_p95_s\": " << num(c.jct_p95_s) << "}";
    first = false;
  }
  o << "\n  },\n";
  o << "  \"invariants\": {\"double_allocations\": " << r.double_allocations
    << ", \"critical_starvation_events\": " << r.critical_starvation_events
    << ", \"regular_preempted_in_window\": " << r.regular_preempted_in_window
    << ", \"unresumed_preempted\": " << r.unresumed_preempted << "}\n";
  o << "}\n";
  return o.str();
}

}  // namespace msomni::sim
