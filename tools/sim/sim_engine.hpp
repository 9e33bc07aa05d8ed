// The discrete-event cluster simulator behind msomni-sim: replays a trace on a
// simulated_clock through the same scheduler and step-predictor cores that run live, with a
// step-timeline model for critical jobs, and accounts allocated vs. busy GPU time honestly
// (see docs/simulator_assumptions.md).
#pragma once

#include "scheduler_types.hpp"
#include "trace_reader.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace msomni::sim {

// The critical-job step timeline: per-job parameters drawn uniformly from these ranges.
struct timeline_model {
  double step_min_s = 20, step_max_s = 60;          // mean step time
  double jitter = 0.03;                             // step-time coefficient of variation
  double bubble_min = 0.10, bubble_max = 0.30;      // pipeline-bubble share of compute
  double data_wait_min = 0.05, data_wait_max = 0.25;  // mean data-wait share of a step
  double data_wait_cv = 0.5;                        // per-step variation of the data wait
  double checkpoint_every_s = 7200;                 // of job progress
  double checkpoint_min_s = 60, checkpoint_max_s = 300;
  double eval_every_s = 3600;
  double eval_min_s = 60, eval_max_s = 300;
};

struct sim_options {
  std::string trace_path, node_list_path, out_path, timeline_path;
  sched::policy_kind policy = sched::policy_kind::omni;
  uint32_t gpus = 0;                 // 0 = sized from the trace (see size_rule in the JSON)
  double target_load = 0.9;          // auto size: mean demand / target_load
  uint32_t gpus_per_node = 8, nodes_per_switch = 4;
  uint64_t seed = 1;
  std::string classes = "auto";      // auto | trace | size[:BIG,SMALL] | C,R,B fractions
  // Internal: the critical-alone baseline run keeps only the critical jobs.
  bool critical_only = false;
  std::set<size_t> skip_rows;        // trace rows the baseline leaves out (rejected in the run)
  bool critical_baseline = true;     // run it, for critical_slowdown
  uint64_t max_jobs = 0;             // 0 = all
  double window_start_s = -1, window_end_s = -1;  // submission-time slice of the trace
  sched::scheduler_params sched;
  double safety_factor = 2.0;
  size_t step_window = 200;
  timeline_model timeline;
  double victim_checkpoint_min_s = 30, victim_checkpoint_max_s = 180;
  double unresponsive_probability = 0.02;  // victim never answers its notice
  double periodic_checkpoint_s = 1800;     // preemptible jobs' own checkpoint interval
  double restart_s = 60;                   // reload a checkpoint before progress resumes
  double share_efficiency = 0.8;           // guest progress per lent GPU-second (interference)
  double timeline_step_s = 3600;
  bool compare = false;  // run omni, exclusive and greedy on the same trace; one table
  bool json = false;     // with compare: the three reports as JSON instead of the table
};

struct class_stats {
  uint64_t submitted = 0, completed = 0, rejected = 0;
  double jct_mean_s = 0, jct_p95_s = 0;
};

struct sim_result {
  std::string format, size_rule;
  uint32_t gpus = 0;
  uint64_t jobs = 0;
  double window_s = 0;                       // measurement window length
  double allocated_utilization = 0, busy_utilization = 0;
  // Share of capacity left free while at least one job waited (sampled per reservation
  // window). With allocated - busy it bounds what any policy could add to busy.
  double free_while_waiting_utilization = 0;
  // The most busy utilisation the trace allows any policy: every job that fits offers its
  // work at its alone rate from its submission (critical jobs at their expected idle share),
  // done by a fluid server of the cluster's size as soon as capacity allows
  // (engine::demand_ceiling). The same for every policy of a trace and seed.
  double demand_ceiling_utilization = 0;
  // Idle share of critical jobs' allocations (what co-location can lend), and the busy time
  // guests made of it, both as shares of capacity.
  double critical_idle_utilization = 0, guest_busy_utilization = 0;
  // Where critical idle time went, as shares of capacity, judged at each window's start
  // from the window's realised idle and the guests then placed: lent to guests (split into
  // guest busy, share-efficiency loss, slices lost to overstay), kept back by the safety
  // margin (idle above the share lent), on host GPUs no guest fitted, and not lent at all
  // because the forecast was below the idle threshold or under the confidence floor, or the
  // host had used up its slowdown budget.
  struct idle_breakdown {
    double guest_busy = 0, efficiency_loss = 0, overstay_lost = 0, margin = 0, no_guest = 0,
           below_threshold = 0, low_confidence = 0, over_budget = 0;
    // Of no_guest and below_threshold: the part in windows when no preemptible job waited
    // at all (nothing to lend to, whatever the threshold).
    double no_guest_queue_empty = 0, below_threshold_queue_empty = 0;
  } idle_split;
  // critical_slowdown: mean over critical jobs of JCT / JCT of the same job when the
  // critical jobs run alone on the same cluster (no lower class at all) - 1: what the other
  // classes and the policy cost them. Compared over jobs completed in both runs.
  double critical_slowdown = 0, critical_slowdown_p95 = 0, critical_slowdown_max = 0;
  uint64_t critical_compared = 0;
  // critical_slowdown_empty_cluster: JCT / trace duration - 1 (each job alone on an empty
  // cluster), which also counts waiting behind other critical jobs. It splits into the part
  // spent waiting to start (queue) and the part a running critical job lost to guests that
  // overstayed (co-location).
  double critical_slowdown_empty_cluster = 0;
  double critical_queue_wait_s = 0, critical_colocation_delay_s = 0;
  double critical_queue_slowdown = 0, critical_colocation_slowdown = 0;
  // The most any one critical job lost to guests, as a share of its duration (what
  // --critical-slowdown-budget bounds, up to one window's overstay).
  double critical_colocation_slowdown_max = 0;
  std::map<std::string, double> critical_jct_s;  // per critical job (not in the JSON)
  std::set<size_t> rejected_rows;                 // trace rows rejected (not in the JSON)
  uint64_t preemptions = 0, shrinks = 0, forced_releases = 0, colocations = 0,
           guest_shortfalls = 0, rejected = 0, reserve_deferrals = 0, budget_holds = 0, cross_switch = 0,
           multi_node = 0;
  double preempted_gpu_hours_lost = 0;       // work lost + drain checkpointing + reloads
  double lost_work_gpu_hours = 0;
  std::map<std::string, class_stats> per_class;
  // Invariants (must be 0 / true on every run).
  uint64_t double_allocations = 0, critical_starvation_events = 0,
           regular_preempted_in_window = 0, unresumed_preempted = 0;
  uint64_t decisions = 0;
  double sim_end_s = 0;
  uint64_t events = 0;
};

sim_result run_simulation(const sim_options& opt, const trace& tr);
std::string to_json(const sim_options& opt, const sim_result& r);

// The policies --compare runs, in the table's column order.
inline constexpr sched::policy_kind compared_policies[] = {sched::policy_kind::omni, sched::policy_kind::exclusive,
                                                           sched::policy_kind::greedy};
// One run per compared policy: the options it ran with and its result.
struct policy_run {
  sim_options opt;
  sim_result result;
};
// A table with one column per policy and one row per headline number, for people.
std::string compare_table(const std::vector<policy_run>& runs);
// {"trace", "seed", "gpus", "policies": {POLICY: the report to_json writes}}.
std::string compare_json(const std::vector<policy_run>& runs);

}  // namespace msomni::sim
