// msomni-sim JSON summary: inputs that shaped the run, the headline numbers the issue asks
// for, per-class completion times, and the invariant counters (all must be zero).
#include "sim_engine.hpp"

#include "core/json_number.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

namespace msomni::sim {

namespace {

using json = nlohmann::ordered_json;

// A measured number to 6 significant digits (the report's precision); a non-finite one as
// core/json_number.hpp writes it.
void put(json& o, const std::string& key, double v) { put_number(o, key, significant_digits(v, 6)); }

}  // namespace

static json report(const sim_options& opt, const sim_result& r) {
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
  return o;
}

std::string to_json(const sim_options& opt, const sim_result& r) {
  return report(opt, r).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string compare_json(const std::vector<policy_run>& runs) {
  json o;
  if (!runs.empty()) {
    o["trace"] = runs.front().opt.trace_path;
    o["seed"] = runs.front().opt.seed;
    o["gpus"] = runs.front().result.gpus;
  }
  json& policies = o["policies"] = json::object();
  for (const auto& run : runs) policies[sched::to_string(run.opt.policy)] = report(run.opt, run.result);
  return o.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

std::string percent(double share) { return std::isfinite(share) ? fixed(100.0 * share, 1) + " %" : "-"; }

std::string jct_mean_h(const sim_result& r, const char* klass) {
  const auto it = r.per_class.find(klass);
  if (it == r.per_class.end() || it->second.completed == 0) return "-";
  return fixed(it->second.jct_mean_s / 3600.0, 2);
}

std::string completed(const sim_result& r) {
  uint64_t done = 0, submitted = 0;
  for (const auto& [k, c] : r.per_class) done += c.completed, submitted += c.submitted;
  return std::to_string(done) + "/" + std::to_string(submitted);
}

}  // namespace

std::string compare_table(const std::vector<policy_run>& runs) {
  using cell = std::function<std::string(const sim_result&)>;
  const std::pair<const char*, cell> rows[] = {
      {"jobs completed/submitted", completed},
      {"allocated utilisation", [](const sim_result& r) { return percent(r.allocated_utilization); }},
      {"busy utilisation", [](const sim_result& r) { return percent(r.busy_utilization); }},
      {"free GPUs while jobs waited", [](const sim_result& r) { return percent(r.free_while_waiting_utilization); }},
      {"critical slowdown (mean)", [](const sim_result& r) { return percent(r.critical_slowdown); }},
      {"critical slowdown (p95)", [](const sim_result& r) { return percent(r.critical_slowdown_p95); }},
      {"critical queue wait (mean s)", [](const sim_result& r) { return fixed(r.critical_queue_wait_s, 1); }},
      {"critical JCT (mean h)", [](const sim_result& r) { return jct_mean_h(r, "critical"); }},
      {"regular JCT (mean h)", [](const sim_result& r) { return jct_mean_h(r, "regular"); }},
      {"best-effort JCT (mean h)", [](const sim_result& r) { return jct_mean_h(r, "best_effort"); }},
      {"preemptions", [](const sim_result& r) { return std::to_string(r.preemptions); }},
      {"shrinks", [](const sim_result& r) { return std::to_string(r.shrinks); }},
      {"forced releases", [](const sim_result& r) { return std::to_string(r.forced_releases); }},
      {"co-locations", [](const sim_result& r) { return std::to_string(r.colocations); }},
      {"GPU-hours lost to preemption", [](const sim_result& r) { return fixed(r.preempted_gpu_hours_lost, 2); }},
      {"rejected jobs", [](const sim_result& r) { return std::to_string(r.rejected); }},
  };
  std::ostringstream out;
  if (!runs.empty())
    out << "trace " << runs.front().opt.trace_path << ", " << runs.front().result.jobs << " jobs on "
        << runs.front().result.gpus << " GPUs, seed " << runs.front().opt.seed << "\n\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-30s", "");
  out << line;
  for (const auto& run : runs) {
    std::snprintf(line, sizeof line, "%12s", sched::to_string(run.opt.policy));
    out << line;
  }
  out << "\n";
  for (const auto& [name, value] : rows) {
    std::snprintf(line, sizeof line, "%-30s", name);
    out << line;
    for (const auto& run : runs) {
      std::snprintf(line, sizeof line, "%12s", value(run.result).c_str());
      out << line;
    }
    out << "\n";
  }
  uint64_t broken = 0;
  for (const auto& run : runs)
    broken += run.result.double_allocations + run.result.critical_starvation_events +
              run.result.regular_preempted_in_window + run.result.unresumed_preempted;
  out << "\ninvariants " << (broken == 0 ? "hold in every run" : "BROKEN: see --json") << "\n";
  return out.str();
}

}  // namespace msomni::sim
