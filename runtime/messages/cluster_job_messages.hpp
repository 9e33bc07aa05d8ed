// Messages between jobs and the co-location scheduler's actor shell:
// submit, step reports for the step-time predictor, completion, and the scheduler's
// commands. The preemption notice and its answer (preempt_notice, job_released) live in
// scheduling_messages.hpp.
// Plain structs, no CAF: pure cores include this header; what CAF needs to carry them
// (their inspect overloads) is in cluster_job_messages_inspect.hpp, which the catalog includes.
#pragma once

#include "core/job_class.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace msomni::msg {

// The numbers a scheduler decision or hold compared, by name, in the order its reason gives
// them (the scheduler core's sched::figures).
using reason_figures = std::vector<std::pair<std::string, double>>;

// What a scheduler command tells its job (job_command::kind); on the wire as its number.
enum class command_kind : uint8_t {
  start,          // job runs on `gpus` with `replicas` replicas
  resize,         // running job now holds `gpus` (`replicas`); grown at once, shrunk via notice
  preempt,        // notice: checkpoint within drain_s, then release (keep_replicas stay)
  force_release,  // drain deadline passed without job_released: GPUs taken back
  colocate,       // preemptible job runs as a guest in `host`'s idle share `share`
  set_share,      // guest's share for the next reservation window
  evict_guest,    // guest leaves its host at a window boundary and waits again
  reject,         // refused at submission
  adopted,        // a restarted scheduler keeps a rejoining job's run on the GPUs it holds
  requeue,        // a rejoining job's GPUs are taken here: stop the run and wait again
  // Why a job waits, a shrunk job does not grow, a critical host lends nothing, or (job
  // empty) why free GPUs stay unused; only when the reason changes. Not counted as a
  // decision, and nothing to carry out.
  hold,
};

inline const char* to_string(command_kind k) {
  switch (k) {
    case command_kind::start: return "start";
    case command_kind::resize: return "resize";
    case command_kind::preempt: return "preempt";
    case command_kind::force_release: return "force_release";
    case command_kind::colocate: return "colocate";
    case command_kind::set_share: return "set_share";
    case command_kind::evict_guest: return "evict_guest";
    case command_kind::reject: return "reject";
    case command_kind::adopted: return "adopted";
    case command_kind::requeue: return "requeue";
    case command_kind::hold: return "hold";
  }
  return "?";
}

// job -> scheduler: run me. The sender is where the job's commands go (on the wire the class
// is its number; the scheduler refuses one it does not know). Idempotent: a repeat of a known
// job is ignored.
struct job_submit {
  std::string job;
  ::msomni::job_class job_class = ::msomni::job_class::regular;
  uint32_t gpus = 1;
  uint32_t gpus_per_replica = 1;
  uint32_t min_replicas = 1;
  // Seconds since the job first submitted (0 the first time). A job that submits again to
  // a restarted scheduler sends how long it has been in line, so that it keeps its place in
  // the queue (measured on the job's own steady clock: no clock sync needed).
  double submitted_ago_s = 0;
  // Device memory the job needs on each of its GPUs to run as a guest (msomni job
  // --memory-gb; 0: not declared). A guest is placed only on a host whose memory forecast
  // leaves at least this much of the device.
  uint64_t memory_bytes = 0;
  bool operator==(const job_submit&) const = default;
};

// job -> a restarted scheduler: the job was running under the previous instance on `held`
// GPUs (`replicas` replicas, at the job's own epoch `epoch`) and still is. The new instance
// adopts it on those GPUs when they are free, else queues it and tells it to stop (see
// scheduler_core::adopt). A guest or a job whose run is ending sends job_submit instead.
struct job_rejoin {
  job_submit request;
  std::vector<uint32_t> held;
  uint32_t replicas = 0;
  uint64_t epoch = 0;
  bool operator==(const job_rejoin&) const = default;
};

// running (critical) job -> scheduler: one optimizer step, for the idle-window predictor.
struct job_step_report {
  std::string job;
  double step_s = 0;
  double data_wait_s = 0;
  double checkpoint_s = 0;
  double bubble_share = 0;
  bool operator==(const job_step_report&) const = default;
};

// job -> scheduler: its command ended by itself, its GPUs are free. Idempotent. How it ended
// goes into the scheduler's bounded history of ended jobs: finished (exit 0), failed (another
// `exit_code`), or `stopped` with a checkpoint to resume from at `checkpoint_step` (msomni-run's
// exit 5 after SIGINT or `msomni stop`). The same job id submitted again resumes a stopped one.
struct job_finished {
  std::string job;
  int32_t exit_code = 0;
  bool stopped = false;
  uint64_t checkpoint_step = 0;  // stopped: the run directory's newest checkpoint (0: none)
  bool operator==(const job_finished&) const = default;
};

// scheduler -> job (and to the decision observer): one scheduler decision with its reason;
// the scheduler core's decisions are these too (sched::command). A hold only explains why the
// job waits or does not grow (`reason`); an empty `job` is the cluster's (to the observer
// only). A start after a preemption carries the `resume_step` the job reported in its
// job_released (0: from scratch; in the core, the step a resubmitted job resumes from).
// Commands with an older `epoch` than one already received are stale. `at_s`: when it was
// decided, on the scheduler's clock (set by the shell as it sends it).
struct job_command {
  command_kind kind = command_kind::start;
  std::string job;
  uint64_t epoch = 0;
  std::vector<uint32_t> gpus;
  uint32_t replicas = 0;
  uint32_t keep_replicas = 0;
  double drain_s = 0;
  std::string host;
  double share = 0;
  uint64_t resume_step = 0;
  double at_s = 0;
  std::string reason;
  reason_figures figures;  // the numbers in `reason`, by name
  bool operator==(const job_command&) const = default;
};

// anyone holding the service's token -> scheduler: how are things? Answered with
// scheduler_status (msomni sched-status).
struct scheduler_status_request {
  std::string who;  // for the log only
  bool operator==(const scheduler_status_request&) const = default;
};

// One job in scheduler_status: where it is and since when (seconds on the scheduler's clock).
struct scheduler_job_row {
  std::string job;
  ::msomni::job_class job_class = ::msomni::job_class::regular;
  std::string phase;       // running, draining, guest, pending
  uint32_t gpus = 0;       // held (running, draining, guest) or asked for (pending)
  uint32_t replicas = 0;
  bool borrowed = false;   // a run on GPUs owed to critical work (gives way at once)
  std::string host;        // a guest's host
  double since_s = 0;      // start of the current run, or submission while pending
  // Why it waits or does not grow (sched::hold_reason's name, "none"), and the explanation;
  // for a running critical job, why it lends nothing to guests in this window.
  std::string hold = "none";
  std::string hold_detail;
  // A guest: its share of its host's GPU time. A running critical job: the share it lends
  // to guests in the next window (0: none).
  double share = 0;
  // A row of scheduler_status::ended (phase finished, stopped, failed or lost; since_s: when it
  // ended): the command's exit code, and for a stopped job the step it resumes from.
  int32_t exit_code = 0;
  uint64_t checkpoint_step = 0;
  // Why it is where it is when not held: a guest's placement, a running critical job's lending
  // (empty otherwise); and the numbers of hold_detail, else of `why`.
  std::string why;
  reason_figures figures;
  bool operator==(const scheduler_job_row&) const = default;
};

// scheduler -> the requester: its queue (bounded by queue_capacity) and its jobs, by phase.
struct scheduler_status {
  std::string policy;
  uint32_t gpus_total = 0, gpus_free = 0;
  uint64_t pending_critical = 0, pending_regular = 0, pending_best_effort = 0, queue_capacity = 0;
  uint64_t running = 0, borrowed = 0, draining = 0, guests = 0;
  uint64_t decisions = 0, reserve_deferrals = 0, rejected = 0;
  uint64_t budget_holds = 0;  // times a critical job went past its slowdown budget and stopped lending
  // After a restart: submissions held back until the recovery period ends (bounded by
  // queue_capacity); recovering is false once it has.
  bool recovering = false;
  uint64_t held_back = 0;
  // The jobs holding GPUs (running, draining, guests), then the queue in its order; at most
  // max_status_rows of them (jobs_listed_of says how many there were in all).
  std::vector<scheduler_job_row> jobs;
  uint64_t jobs_listed_of = 0;
  double now_s = 0;  // the scheduler's clock when it answered: since_s is relative to it
  std::string metrics_address;  // HOST:PORT of msomni-sched's /metrics; empty when it serves none
  // Why free GPUs stayed unused after the latest pass, or that the queue is at its bound
  // (sched::hold_reason's name, "none"), the job it is about and the explanation.
  std::string held = "none";
  std::string held_job, held_detail;
  double best_effort_drain_s = 0;  // notice -> forced release for work that gives way at once
  // The jobs that ended, newest first (stopped ones can be resumed by submitting them again),
  // as many as the scheduler keeps (ended_capacity; older ones were dropped); lost in a
  // restart of the scheduler.
  std::vector<scheduler_job_row> ended;
  uint64_t ended_capacity = 0;
  reason_figures held_figures;  // the numbers of held_detail
  // The newest decisions and holds, oldest first, at most max_recent_decisions.
  std::vector<job_command> recent;
  static constexpr size_t max_status_rows = 256;
  static constexpr size_t max_recent_decisions = 32;
  bool operator==(const scheduler_status&) const = default;
};

}  // namespace msomni::msg
