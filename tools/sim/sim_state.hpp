// Internal state of the simulator engine: per-job bookkeeping and the engine class that its
// sources share: sim_engine.cpp (commands, GPU-time accounting), sim_topology.cpp,
// sim_workload.cpp (jobs, the critical-job step model), sim_ceiling.cpp, sim_events.cpp
// (arrivals, ticks, completions), sim_accounting.cpp (guests, idle split) and
// sim_results.cpp. Not part of the tool's interface.
#pragma once

#include "core/clock.hpp"
#include "core/rng.hpp"
#include "scheduler_core.hpp"
#include "sim_engine.hpp"
#include "step_predictor.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace msomni::sim {

struct sjob {
  trace_job t;
  size_t index = 0;
  sched::job_class klass = sched::job_class::regular;
  uint32_t gpr = 1, full_replicas = 1, min_replicas = 1;
  double remaining_s = 0;     // time left running alone at full size
  double progress_s = 0;
  double last_ckpt_s = 0;     // progress saved by the last checkpoint
  double rate = 0;            // alone-seconds per second (replicas / full replicas)
  double last_t = 0, stall_until = 0, run_since = 0, first_start = -1, completion = -1;
  uint32_t held = 0;
  std::vector<uint32_t> gpu_list;  // same order as the core's
  bool running = false, draining = false, guest = false, done = false, ever_preempted = false;
  uint32_t keep_on_drain = 0;
  uint64_t epoch = 0;
  simulated_clock::timer_id finish_timer = 0;
  // Guest.
  size_t host = 0;
  double share = 0, credited_until = 0;
  // Critical-job step timeline.
  bool timeline_ready = false;
  double step_mean_s = 0, bubble = 0, data_wait_share = 0, ckpt_len_s = 0, eval_len_s = 0;
  double timeline_s = 0;
  // Phases every so many steps, as a training loop schedules them (checkpoint_every_steps):
  // the checkpoint period is a whole number of evaluation periods when both are set.
  uint64_t steps_done = 0, eval_every_steps = 0, ckpt_every_steps = 0;
  // The step in progress: its sample (fed to the predictor once it is over), and what is
  // left of it. A step is data wait, then compute (bubble share idle), then its
  // checkpoint/evaluation phase, if any.
  predict::step_sample cur_step;
  double carry_s = 0;                   // unfinished part of the current step
  double cur_idle = 0;                  // realised idle share of the current window
  std::vector<predict::step_sample> window_samples;
  double colocation_delay_s = 0;
  size_t trace_pos = 0;  // row in the trace: names the job across the run and its baseline
  double shortfall_until = 0;  // host: its wait for guests is charged up to here (once for all guests)
};

// The id the scheduler core knows a job by: trace ids need not be unique across a slice.
inline std::string sim_key(const sjob& j) { return j.t.id + "#" + std::to_string(j.index); }

class engine {
 public:
  engine(const sim_options& opt, const trace& tr);
  sim_result run();

 private:
  static sched::topology make_topology(const sim_options& opt, const trace& tr, sim_result& r);
  static sched::scheduler_params with_policy(const sim_options& opt);
  void build_jobs(const trace& tr);
  double now() const;
  time_point at(double s) const;
  void account(double a, double b, double gpus, double& acc) const;
  void settle(sjob& j);
  void reschedule(sjob& j);
  void take_gpus(sjob& j, const std::vector<uint32_t>& gpus);
  void drop_gpus(sjob& j, size_t keep);
  void release_local(sjob& j, uint32_t keep_replicas, double lost_s);
  void victim_answers(size_t idx, uint64_t epoch, bool graceful);
  void on_preempt(sjob& j, const sched::command& c);
  void on_start(sjob& j, const sched::command& c);
  void apply(const std::vector<sched::command>& cmds);
  void arrive(size_t idx);
  void finish(sjob& j);
  void credit_guest(sjob& g, double until);
  void catch_up();
  void complete(sjob& j);
  // Draws a critical job's step timeline (seeded by its index: the same in every policy).
  void draw_timeline(sjob& j) const;
  void init_timeline(sjob& j);
  // result_.demand_ceiling_utilization (sim_result): a fluid bound on any policy's busy time.
  void demand_ceiling();
  void roll_window(sjob& j);
  void tick();
  void split_idle(double window_s);
  void check_invariants();
  void timeline_row();

  sim_options opt_;
  sim_result result_;
  simulated_clock clk_;
  sched::scheduler_core core_;
  predict::step_predictor predictor_;
  rng_stream rng_;
  std::vector<sjob> jobs_;
  std::map<std::string, size_t> index_;
  std::vector<int64_t> owner_;         // independent GPU owner map: the double-allocation check
  std::set<size_t> active_, guests_;   // jobs holding GPUs; guests
  uint64_t unfinished_ = 0;
  double t0_ = 0, t1_ = 1;             // measurement window
  double window_start_ = 0, next_row_ = 0;
  double free_waiting_gpu_s_ = 0;  // free GPUs while a job waits, sampled per window
  double critical_idle_gpu_s_ = 0, guest_busy_gpu_s_ = 0;
  sim_result::idle_breakdown idle_split_gpu_s_;  // GPU-seconds, see sim_result::idle_split
  double allocated_gpu_s_ = 0, busy_gpu_s_ = 0, lost_gpu_s_ = 0, restart_gpu_s_ = 0,
         drain_gpu_s_ = 0;
  bool tick_armed_ = false;
  std::vector<std::string> rows_;
};

}  // namespace msomni::sim
