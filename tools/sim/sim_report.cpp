// msomni-sim JSON summary: inputs that shaped the run, the headline numbers the issue asks
// for, per-class completion times, and the invariant counters (all must be zero).
#include "sim_engine.hpp"

#include "core/json_number.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace msomni::sim {

namespace {

using json = nlohmann::ordered_json;

// A measured number to 6 significant digits (the report's precision); a non-finite one as
// core/json_number.hpp writes it.
void put(json& o, const std::string& key, double v) { put_number(o, key, significant_digits(v, 6)); }

}  // namespace

std::string to_json(const sim_options& opt, const sim_result& r) {
  json o;
  o["trace"] = opt.trace_path;
  o["format"] = r.format;
  o["policy"] = sched::to_string(opt.policy);
  o["seed"] = opt.seed;
  o["classes"] = opt.classes;
  o["gpus"] = r.gpus;
  o["size_rule"] = r.size_rule;
  o["jobs"] = r.jobs;
  put(o, "measurement_window_s", r.window_s);
  put(o, "allocated_utilization", r.allocated_utilization);
  put(o, "busy_utilization", r.busy_utilization);
  put(o, "free_while_waiting_utilization", r.free_while_waiting_utilization);
  put(o, "demand_ceiling_utilization", r.demand_ceiling_utilization);
  put(o, "critical_idle_utilization", r.critical_idle_utilization);
  put(o, "guest_busy_utilization", r.guest_busy_utilization);
  const auto& s = r.idle_split;
  json& split = o["critical_idle_split"] = json::object();
  put(split, "guest_busy", s.guest_busy);
  put(split, "efficiency_loss", s.efficiency_loss);
  put(split, "overstay_lost", s.overstay_lost);
  put(split, "margin", s.margin);
  put(split, "no_guest", s.no_guest);
  put(split, "below_threshold", s.below_threshold);
  put(split, "low_confidence", s.low_confidence);
  put(split, "over_budget", s.over_budget);
  json& empty = o["critical_idle_queue_empty"] = json::object();
  put(empty, "no_guest", s.no_guest_queue_empty);
  put(empty, "below_threshold", s.below_threshold_queue_empty);
  put(o, "critical_slowdown", r.critical_slowdown);
  put(o, "critical_slowdown_p95", r.critical_slowdown_p95);
  put(o, "critical_slowdown_max", r.critical_slowdown_max);
  o["critical_compared"] = r.critical_compared;
  put(o, "critical_slowdown_empty_cluster", r.critical_slowdown_empty_cluster);
  put(o, "critical_queue_slowdown", r.critical_queue_slowdown);
  put(o, "critical_colocation_slowdown", r.critical_colocation_slowdown);
  put(o, "critical_colocation_slowdown_max", r.critical_colocation_slowdown_max);
  put(o, "critical_queue_wait_s", r.critical_queue_wait_s);
  put(o, "critical_colocation_delay_s", r.critical_colocation_delay_s);
  o["preemptions"] = r.preemptions;
  o["shrinks"] = r.shrinks;
  o["forced_releases"] = r.forced_releases;
  o["colocations"] = r.colocations;
  o["guest_shortfalls"] = r.guest_shortfalls;
  put(o, "preempted_gpu_hours_lost", r.preempted_gpu_hours_lost);
  put(o, "lost_work_gpu_hours", r.lost_work_gpu_hours);
  o["rejected"] = r.rejected;
  o["reserve_deferrals"] = r.reserve_deferrals;
  o["budget_holds"] = r.budget_holds;
  o["multi_node_placements"] = r.multi_node;
  o["cross_switch_placements"] = r.cross_switch;
  o["decisions"] = r.decisions;
  o["events"] = r.events;
  put(o, "sim_end_s", r.sim_end_s);
  json& classes = o["classes_stats"] = json::object();
  for (const auto& [k, c] : r.per_class) {
    json& row = classes[k] = json::object();
    row["submitted"] = c.submitted;
    row["completed"] = c.completed;
    row["rejected"] = c.rejected;
    put(row, "jct_mean_s", c.jct_mean_s);
    put(row, "jct_p95_s", c.jct_p95_s);
  }
  o["invariants"] = {{"double_allocations", r.double_allocations},
                     {"critical_starvation_events", r.critical_starvation_events},
                     {"regular_preempted_in_window", r.regular_preempted_in_window},
                     {"unresumed_preempted", r.unresumed_preempted}};
  return o.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace msomni::sim
