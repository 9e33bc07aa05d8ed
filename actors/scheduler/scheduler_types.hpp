// Values the scheduler core takes and returns: job requests, cluster topology, policy
// parameters, and commands (each with the reason it was taken). Shared by the CAF shell
// and the trace simulator; no CAF, no clock.
#pragma once

#include "step_predictor.hpp"

#include "core/job_class.hpp"
#include "messages/cluster_job_messages.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::sched {

using ::msomni::job_class;  // core/job_class.hpp: the config's and the messages' too
enum class policy_kind : uint8_t { omni, exclusive, greedy };

// Every class below critical may be preempted or shrunk for a higher one.
inline bool preemptible(job_class c) { return c != job_class::critical; }

using ::msomni::to_string;
const char* to_string(policy_kind p);
bool parse_policy(const std::string& text, policy_kind& out);

struct job_request {
  std::string id;
  job_class klass = job_class::regular;
  uint32_t gpus = 1;              // at full size
  uint32_t gpus_per_replica = 1;  // elastic unit: a data-parallel replica
  uint32_t min_replicas = 1;      // preemptible jobs may be shrunk down to this
  // How long ago the job first submitted (to a previous instance of the scheduler): it
  // takes its place in the queue as of then. 0: now. At most max_submitted_ago_s counts.
  double submitted_ago_s = 0;
  static constexpr double max_submitted_ago_s = 30 * 86400.0;
  // Device memory it needs on each GPU to run as a guest (0: not declared). Its own memory
  // reports (scheduler_core::report_memory) raise it when they forecast more.
  uint64_t memory_bytes = 0;
};

// A replica's GPUs (at least 1), and the replicas of the job at full size (at least 1).
inline uint32_t per_replica(const job_request& r) { return r.gpus_per_replica > 0 ? r.gpus_per_replica : 1; }
inline uint32_t full_replicas(const job_request& r) {
  const uint32_t n = r.gpus / per_replica(r);
  return n > 0 ? n : 1;
}

// Nodes in switch order: node i hangs under switch i / nodes_per_switch.
struct topology {
  std::vector<uint32_t> node_gpus;
  uint32_t nodes_per_switch = 4;
  static topology uniform(uint32_t gpus, uint32_t gpus_per_node, uint32_t nodes_per_switch);
  uint32_t total_gpus() const;
};

struct scheduler_params {
  policy_kind policy = policy_kind::omni;
  double idle_threshold = 0.35;         // co-locate only when predicted idle share passes it
  double min_confidence = 0.5;          // ... and the predictor is at least this sure
  double drain_period_s = 600;          // notice -> forced release, regular jobs
  // Notice -> forced release for work that gives way at once (best-effort, borrowed runs):
  // time for its SIGTERM handler. 0 here (the simulator's model: preemptible at any time);
  // msomni-sched takes scheduler.best_effort_drain_s (30 s unless configured).
  double best_effort_drain_s = 0;
  double min_run_window_s = 7200;       // a regular job runs this long before preemption
  // Co-location is decided per window of this length (30 min to 1 h is the useful range; shorter
  // windows only add shortfalls, see BENCHMARKS.md).
  double reservation_window_s = 1800;
  size_t queue_capacity = 1024;         // pending jobs; submissions past it are rejected
  size_t decision_log_capacity = 4096;  // newest decisions kept
  // Jobs that ended (finished, failed, stopped and resumable, lost) kept for status; past it
  // the oldest is dropped (ended_jobs.hpp).
  size_t ended_jobs_capacity = 256;
  // Waiting jobs whose hold reasons a pass logs (the first in queue order; sched-status shows
  // every job's).
  size_t hold_log_jobs = 4;
  // omni's reserve for critical jobs: regular jobs may lock (hold inside their run window,
  // min replicas) only GPUs that critical demand left unused at its peak over this memory
  // (7 days: a weekly rhythm of critical bursts); beyond it they borrow on best-effort
  // terms. 0 = no reserve.
  double critical_peak_memory_s = 604800;
  // The reserve is this many times that peak: room for a burst above the past week's peak
  // (2: on the ITP traces a 1x reserve left critical bursts waiting for locked regular
  // jobs, up to 4.9% mean slowdown on cluster01; regular JCT barely moved at 2x, since
  // regular jobs borrow the reserve meanwhile; see BENCHMARKS.md).
  double critical_reserve_factor = 2.0;
  size_t critical_peak_samples = 4096;  // bound on the sliding-window maximum's entries
  // Share of a critical job's run time that its guests may cost it (guests must cost a
  // critical job under 1% of its training time). The environment reports what each host lost to its guests
  // (scheduler_core::report_guest_delay); a host past its budget lends nothing, and its
  // guests leave at the next window, until its run has grown back under the budget. omni
  // only (greedy is the baseline without such care).
  double critical_slowdown_budget = 0.01;
};

// What a command tells its job: the message catalog's (cluster_job_messages.hpp).
using ::msomni::msg::command_kind;
using ::msomni::msg::to_string;

// Why a guest left its host (evict_guest), as counted by scheduler_core::guest_evictions().
enum class eviction_cause : uint8_t {
  memory,      // the host's memory forecast no longer leaves the guest's need on the device
  lending,     // the host lends no idle share in the next window (threshold, confidence, budget)
  free_gpus,   // free GPUs: the guest runs alone
  host_ended,  // the host finished
};
inline constexpr size_t eviction_cause_count = 4;
const char* to_string(eviction_cause c);

// Why a job waits (or a shrunk one does not grow) after a scheduling pass; for a running
// critical job, why it lends nothing to guests in this window.
enum class hold_reason : uint8_t {
  none,
  cluster_full,      // fewer GPUs free than it needs, and none it may take
  queue_order,       // a job ahead of it in the queue waits first
  critical_waits,    // the GPUs are owed to a waiting critical job; only free ones may be borrowed
  critical_reserve,  // free GPUs are kept in omni's reserve for critical bursts
  run_window,        // the jobs it may take from are inside their run window (min_run_window_s)
  draining,          // it waits for GPUs its notices asked back (drain periods)
  below_threshold,   // a critical host's predicted idle share is under idle_threshold
  low_confidence,    // ... its forecast is missing or under min_confidence
  over_budget,       // ... it is past critical_slowdown_budget
  queue_bound,       // the queue is at queue_capacity: submissions are refused
  memory,            // a guest: the host's memory forecast leaves less of the device than it needs
};
const char* to_string(hold_reason r);

// The numbers behind a decision or hold, by name ("idle_share", "idle_threshold", ...), in the
// order its text gives them. The text and these come from the same record
// (scheduler_reasons.cpp): msomni-sched prints the text, sched-status --json gives these as an
// object.
using figures = ::msomni::msg::reason_figures;

// What omni compares, in this order, to decide whether a critical host lends idle time in the
// next window (scheduler_core::lending_of, lending_figures_of).
struct lending_figures {
  // 1. the slowdown budget: what its guests cost it in its run, as last reported, against
  //    critical_slowdown_budget x its run time then (report_guest_delay).
  bool delay_reported = false;
  double guest_delay_s = 0, run_s = 0, slowdown_budget = 0, budget_s = 0;
  // 2. its forecast, if any: confidence against min_confidence. The confidence is
  //    min(1, samples / warmup_samples) x (1 - step_cv); warmup_samples 0: not known (a
  //    forecast given without them).
  bool forecast = false;
  double confidence = 0, min_confidence = 0;
  uint64_t samples = 0, warmup_samples = 0;
  double step_cv = 0;
  // 3. its idle share, the larger of the next window's and the one over its rhythm, against
  //    idle_threshold.
  double idle_share = 0, window_idle = 0, rhythm_idle = 0, idle_threshold = 0;
  // What it lends in the next window when it qualifies (guest_share), else 0.
  double lends = 0;
};

// A hold with what explains it (filled as the reason needs).
struct hold_note {
  hold_reason reason = hold_reason::none;
  uint32_t gpus_free = 0;    // free GPUs as the pass left them
  uint32_t gpus_wanted = 0;  // what the job needs to start, or to grow by one replica (queue_bound: jobs queued)
  uint32_t reserve = 0;      // omni's critical reserve (GPUs)
  std::string by;            // the job in front of it, the critical job it waits for, or the host
  // memory: what the guest needs, what the host's forecast leaves of its device, and the device.
  uint64_t need_bytes = 0;
  int64_t headroom_bytes = 0;
  uint64_t device_bytes = 0;
  // run_window: seconds until the first of those run windows ends.
  double window_left_s = 0;
  // queue_bound: the queue's bound.
  uint64_t queue_capacity = 0;
  // below_threshold, low_confidence, over_budget: what the host's lending compared.
  lending_figures lending{};
};
// One line for the decision log and sched-status, with the numbers compared in it.
std::string explain(const hold_note& h);
// The numbers explain() gives, by name.
figures figures_of(const hold_note& h);
// "12.50 GB" (bytes / 1e9, as [memory] counts gigabytes).
std::string gb_text(double bytes);

// A decision, as the core takes it and the shell sends it: the message itself (its `at_s` is
// left to the shell; `resume_step` is the step a resubmitted job resumes from, 0: none known
// to the core; `figures`: what the decision compared, as its reason gives it).
using command = ::msomni::msg::job_command;

inline command make_command(command_kind k, std::string job, uint64_t epoch) {
  command c;
  c.kind = k;
  c.job = std::move(job);
  c.epoch = epoch;
  return c;
}

struct decision {
  double at_s = 0;
  command cmd;
};

// What the core knows about a critical job's idle time, from the step predictor.
struct host_forecast {
  double idle_mean = 0;
  double lendable_share = 0;  // mean minus the safety margin
  double last_idle = 0;       // newest observation only
  double confidence = 0;
  double phase_share = 0;     // share of the next window surely inside a checkpoint/eval phase
  // The job's idle share over its whole rhythm: ordinary steps plus checkpoint/evaluation
  // phases at their observed rate (what the GPUs' idle ratio is over hours).
  double rhythm_idle = 0;
  // What the confidence came from: the step samples kept, the samples it takes to reach full
  // confidence (0: not known), and the step times' coefficient of variation.
  uint64_t samples = 0, warmup_samples = 0;
  double step_cv = 0;
};

// What the core takes from a step-predictor forecast (the live shell and msomni-sim both).
host_forecast host_forecast_of(const predict::idle_forecast& f);
// The same, with what its confidence came from (the predictor's statistics of the job and its
// warmup_steps), so that a low confidence can say why.
host_forecast host_forecast_of(const predict::idle_forecast& f, const predict::step_stats& st, size_t warmup_steps);

}  // namespace msomni::sched
