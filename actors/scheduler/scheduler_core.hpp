// Scheduler policy core: job classes, placement, graceful preemption with a drain
// period, the anti-starvation run window, elastic shrink/grow at replica granularity, and
// co-location of preemptible jobs into critical jobs' predicted idle share. No clock, no
// threads, no files: events come in with `now_s`, commands go out as values, and every
// command is logged with its reason. Used by the CAF shell and by msomni-sim alike.
//
// Job states:
//   pending --start--> running --preempt--> draining --released/forced--> pending (resume)
//      |                  |  ^                  (keep_replicas > 0: back to running, smaller)
//      |                  +--+ resize (grow at once; shrink goes through draining)
//      +--colocate--> guest --evict_guest--> pending
//   any phase --finished--> ended (kept in a bounded history: finished, failed, lost, or
//                   stopped at a checkpoint step) --the same id submitted--> pending (resume)
#pragma once

#include "ended_jobs.hpp"
#include "placement.hpp"
#include "scheduler_reasons.hpp"
#include "scheduler_types.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace msomni::sched {

enum class job_phase : uint8_t { pending, running, draining, guest };
inline constexpr size_t job_phase_count = 4;
const char* to_string(job_phase p);

struct job_state {
  job_request req;
  job_phase phase = job_phase::pending;
  std::vector<uint32_t> gpus;
  uint32_t replicas = 0;
  uint64_t epoch = 0;          // bumped by every start and notice; stale replies are ignored
  uint64_t order = 0;          // submission sequence: ties in the queue break by it
  double submit_s = 0;
  double run_since_s = 0;      // start of the current continuous run
  double drain_deadline_s = 0;
  uint32_t keep_replicas = 0;  // replicas that stay when the drain completes
  std::string host;            // while a guest (its `gpus` are a slice of the host's)
  double share = 0;            // while a guest
  uint32_t preemptions = 0;
  // It stopped with a checkpoint under an earlier submission: the step its starts resume from.
  uint64_t resume_step = 0;
  // omni: this run borrows GPUs owed to a waiting critical job or kept in the critical
  // reserve. It gives them back at once when asked (no drain, no run window), like
  // best-effort work, until it next waits.
  bool borrowed = false;
  // Critical hosts: what its guests have cost it in this run, as last reported
  // (report_guest_delay), its run time then, and whether that is past
  // params.critical_slowdown_budget of it.
  double guest_delay_s = 0;
  double guest_delay_run_s = 0;
  bool delay_reported = false;
  bool over_budget = false;
  // Why it waits (pending) or does not grow (running shrunk), as of the pass numbered
  // hold_pass; hold_logged: the reason the decision log last gave for it.
  hold_note hold;
  uint64_t hold_pass = ~uint64_t{0};
  hold_reason hold_logged = hold_reason::none;
  // A running critical job: why it lent nothing in the last window (none: it lent), and
  // what the log last said (its reason and, within it, the cause).
  hold_reason lending_hold = hold_reason::none, lending_logged = hold_reason::none;
  lending_cause lending_cause_logged = lending_cause::none;
  // Its newest memory report (report_memory): forecast peak plus margin over its ranks, and
  // the device each rank has (0: none reported). Kept while it waits: an evicted guest's
  // forecast still says what it needs.
  uint64_t memory_forecast_bytes = 0;
  uint64_t memory_device_bytes = 0;
  // A pending guest: the host its memory hold was last logged for (logged again only for
  // another host, or after it ran).
  std::string memory_hold_host;
  // A guest: why it was placed (its colocate's reason and numbers), for status.
  explained placed;
};

// What a guest needs of a host's device: what it declared, or its own forecast when higher.
inline uint64_t memory_need(const job_state& j) { return std::max(j.req.memory_bytes, j.memory_forecast_bytes); }

// How many jobs are where (for status and metrics).
struct queue_counts {
  size_t pending_by_class[3] = {0, 0, 0};  // indexed by job_class
  size_t running = 0, borrowed = 0, draining = 0, guests = 0;
  uint64_t rejected = 0;
};

// Jobs the core knows, by class then phase (job_class and job_phase as indices).
using class_phase_counts = std::array<std::array<uint64_t, job_phase_count>, 3>;

class scheduler_core {
 public:
  scheduler_core(topology topo, scheduler_params params);

  // Each call returns the commands to carry out, in order. A job the history of ended jobs
  // holds as stopped leaves it when admitted: its starts carry the step it resumes from.
  std::vector<command> submit(const job_request& req, double now_s);
  // A job that ran under a previous instance of the scheduler (msomni-sched restarted) and
  // still runs on `gpus` with `replicas` replicas, at its own `epoch`. When those GPUs are a
  // valid size for it and all free here, it keeps them (command adopted; its run window
  // starts again now). Otherwise it is queued as if just submitted and told to stop its run
  // (command requeue); a request submit() would refuse is rejected the same way. Nothing
  // else is placed: a restarted service runs schedule_now() once the jobs it waits for have
  // rejoined (or at once, for a late rejoin).
  std::vector<command> adopt(const job_request& req, const std::vector<uint32_t>& gpus, uint32_t replicas,
                             uint64_t epoch, double now_s);
  // One scheduling pass over the queue, as after any other event.
  std::vector<command> schedule_now(double now_s);
  // Victim's job_released. Idempotent: a repeat or a stale epoch does nothing.
  std::vector<command> released(const std::string& job, uint64_t epoch, double now_s);
  // A job ended (`how`, kept in the history of ended jobs): its GPUs are free, or, while it
  // waits (preempted, or not started yet: its `msomni job` went away), it leaves the queue.
  // Idempotent.
  std::vector<command> finished(const std::string& job, double now_s, const job_outcome& how = {});
  // Drain deadlines that passed become force_release; call at least at every deadline.
  std::vector<command> expire(double now_s);
  // One reservation window boundary: guests re-evaluated, new guests placed.
  std::vector<command> window(double now_s);
  void set_forecast(const std::string& host, const host_forecast& f) { forecasts_[host] = f; }
  // What a running critical job has lost to its guests since it started (seconds of its
  // run, cumulative; the simulator knows it, the live shell estimates it from step reports).
  // Past critical_slowdown_budget of its run time the host lends nothing (omni) until its run
  // has grown back under it. Reports for other jobs, and under other policies, are ignored.
  void report_guest_delay(const std::string& host, double lost_s, double now_s);
  // Share of a critical host's GPU time the policy lends to guests in the next window from
  // its latest forecast (0: not lendable).
  double guest_share(const std::string& host) const;
  // omni's rule for a critical host in the next window, checked in this order: past its
  // slowdown budget; no forecast, or one under min_confidence; idle share (over its rhythm
  // and over the window) under idle_threshold; else it qualifies and guest_share() says how
  // much it lends (greedy and exclusive do not use the rule).
  enum class lending : uint8_t { over_budget, low_confidence, below_threshold, qualifies };
  lending lending_of(const std::string& host) const;
  // The numbers lending_of() compares for `host` (its lends: guest_share()).
  lending_figures lending_figures_of(const std::string& host) const;
  // lending_of() as a hold reason (none: it qualifies).
  hold_reason lending_hold_of(const std::string& host) const;
  // Why `host` lends nothing in the next window, with the numbers compared (reason none: it
  // lends).
  hold_note lending_hold_note(const std::string& host) const;
  bool has_guests(const std::string& host) const { return guests_of_.count(host) != 0; }
  // A job's memory report: `forecast_peak_bytes` (its ranks' largest forecast peak plus the
  // safety margin; 0: none yet) on devices of `device_bytes` (0: unknown). For a critical
  // host, each guest whose need (memory_need) passes what the forecast leaves of the device
  // is evicted at once (cause memory; guests sit on GPUs of their own, so each is judged
  // alone); for a guest, its need rises to its forecast and it is evicted when its host no
  // longer leaves that much. A job the core does not know: false, nothing done.
  bool report_memory(const std::string& job, uint64_t forecast_peak_bytes, uint64_t device_bytes, double now_s,
                     std::vector<command>& out);
  // What a host's latest memory report leaves of its device (device - forecast peak; may be
  // negative), or false when it has none (no forecast or no device): then guests are placed
  // by the idle share alone.
  bool memory_headroom(const job_state& host, int64_t& headroom) const;

  const job_state* find(const std::string& job) const;
  // Why `j` waits or does not grow after the latest pass (reason none: it does neither).
  hold_note hold_of(const job_state& j) const;
  // Why free GPUs stayed unused after the latest pass (the first waiting job's reason, or
  // the reserve holding back a shrunk job's growth), or that the queue is at its bound;
  // `job` gets the job it is about (empty for the queue bound).
  const hold_note& held(std::string* job = nullptr) const {
    if (job) *job = cluster_hold_job_;
    return cluster_hold_;
  }
  // GPUs omni's critical reserve keeps now (0 without a reserve).
  uint32_t critical_reserve_gpus() const noexcept { return critical_peak_now_; }
  const placement& gpus() const noexcept { return place_; }
  const scheduler_params& params() const noexcept { return params_; }
  size_t pending_count() const noexcept { return pending_.size(); }
  size_t job_count() const noexcept { return jobs_.size(); }
  const std::deque<decision>& log() const noexcept { return log_; }
  // Jobs that ended, oldest first, at most params.ended_jobs_capacity.
  const ended_jobs& ended() const noexcept { return ended_; }
  uint64_t decisions_total() const noexcept { return decisions_total_; }
  // Hold commands so far (not decisions: each says why something waits).
  uint64_t holds_total() const noexcept { return holds_total_; }
  uint64_t cross_switch_placements() const noexcept { return cross_switch_; }
  uint64_t multi_node_placements() const noexcept { return multi_node_; }
  uint64_t reserve_deferrals() const noexcept { return reserve_deferrals_; }
  // Times a critical host went past its slowdown budget and stopped lending.
  uint64_t budget_holds() const noexcept { return budget_holds_; }
  // Reservation windows in which a critical host lent nothing because it was past its
  // slowdown budget: one per such host and window (omni).
  uint64_t budget_hold_windows() const noexcept { return budget_hold_windows_; }
  // Guests evicted so far, by cause (eviction_cause as the index).
  const std::array<uint64_t, eviction_cause_count>& guest_evictions() const noexcept { return evictions_; }
  // Guests not placed on a host because its memory forecast left less than they need (one
  // per guest, host and window).
  uint64_t memory_skips() const noexcept { return memory_skips_; }
  // Jobs by class and phase, kept as they change (no scan of the queue).
  const class_phase_counts& jobs_by_class_phase() const noexcept { return by_class_phase_; }
  queue_counts counts() const;
  // Jobs holding GPUs (running, draining, then guests), then the queue in its order; at most
  // `limit` of them. `total` gets how many jobs there are in all.
  std::vector<const job_state*> listing(size_t limit, size_t& total) const;
  // Invariant probe: true when a critical job waits while a lower-class job that policy
  // allows to be preempted or shrunk still runs without a notice.
  bool critical_starved_by_lower(double now_s) const;
  // The earliest pending drain deadline, or a negative number when nothing drains.
  double next_deadline_s() const;
  // While a critical job waits: the earliest end of a regular job's run window that no
  // scheduling pass has seen yet (from then on it may be preempted for the critical job),
  // else a negative number. Call expire() then, as at a drain deadline.
  double next_window_end_s() const;

 private:
  using queue_key = std::tuple<uint8_t, double, uint64_t, std::string>;
  queue_key key_of(const job_state& j) const;
  // Why submit() (`queued`: the job would wait in the queue) would turn `req` away (empty
  // text: it would not).
  explained refusal(const job_request& req, bool queued) const;
  // A new job's state, its request normalised (replica size, min replicas by class).
  job_state& admit(const job_request& req, double now_s);
  // Why `gpus` cannot be the adopted run of `j` here (empty text: they can).
  explained unadoptable(const job_state& j, const std::vector<uint32_t>& gpus, uint32_t replicas) const;
  void emit(double now_s, command c, std::vector<command>& out);
  // One pass over the queue under params_.policy (scheduler_pass.cpp), by one of:
  void schedule(double now_s, std::vector<command>& out);
  void schedule_exclusive(double now_s, std::vector<command>& out);  // scheduler_pass_exclusive.cpp
  void schedule_greedy(double now_s, std::vector<command>& out);     // scheduler_pass_greedy.cpp
  void schedule_omni(double now_s, std::vector<command>& out);       // scheduler_pass_omni.cpp
  // What a pass has left to hand out as it walks the queue in order.
  struct pass_state {
    uint32_t free_now = 0;  // GPUs free now and not yet started on in this pass
    // GPUs that are free or will be once the notices already sent are answered; a blocked
    // job claims its share of them so that one drain is not promised to two jobs.
    int64_t pool = 0;
    bool any_blocked = false, critical_blocked = false;
    std::string first_blocked, first_critical_blocked;  // who they are (hold reasons name them)
    // What a job may start on now: free GPUs nobody in front of it was promised.
    int64_t usable() const { return std::min<int64_t>(free_now, std::max<int64_t>(pool, 0)); }
  };
  // omni's pass also tracks its critical reserve and the GPUs that give way at once.
  struct omni_pass : pass_state {
    int64_t regular_room = 0;  // GPUs regular jobs may still take beside the reserve
    // GPUs of running jobs that give way at once (best-effort, borrowed): a blocked critical
    // job counts them as its own without evicting them until that lets it start (claimed in
    // queue order within the pass).
    int64_t at_once = 0;
  };
  pass_state pass_begin() const;
  // Starts `j` at full size when it fits in the usable GPUs (a backfill behind a blocked job).
  bool start_if_fits(job_state& j, pass_state& p, double now_s, std::vector<command>& out);
  // Asks lower classes for what `j` lacks beyond the pool, when the pool does not cover it.
  void reclaim_shortfall(const job_state& j, pass_state& p, double now_s, std::vector<command>& out);
  // `j` waits: it claims its GPUs from the pool, and those behind it know a job is blocked.
  static void block(const job_state& j, pass_state& p);
  // Why `j` waits once its claim is made (before block()).
  hold_note waiting_hold(const job_state& j, const pass_state& p) const;
  // Records why `j` waits in this pass; logs a hold when the reason changed (not for
  // queue_order, which the job in front explains).
  void set_hold(job_state& j, hold_note h, double now_s, std::vector<command>& out);
  // After a pass: the cluster-level hold (held()), logged when its reason changed.
  void note_cluster_hold(double now_s, std::vector<command>& out);
  // At a window: why each running critical host lends nothing, logged when it changed while
  // preemptible jobs wait.
  void note_lending(double now_s, std::vector<command>& out);
  // A hold command (job empty: the cluster's), `prefix` before its explanation.
  void emit_hold(double now_s, const std::string& job, uint64_t epoch, const hold_note& h, std::vector<command>& out,
                 const std::string& prefix = {});
  // omni's steps (scheduler_pass_omni.cpp).
  void omni_borrow_while_critical_waits(job_state& j, omni_pass& p, double now_s, std::vector<command>& out);
  void omni_start_beside_reserve(job_state& j, omni_pass& p, double now_s, std::vector<command>& out);
  bool omni_start_elastic(job_state& j, omni_pass& p, double now_s, std::vector<command>& out);
  // Starts `j` with `replicas` and takes their GPUs out of what the pass has left (out of
  // the room beside the reserve too, for a regular job's own run).
  void omni_start_replicas(job_state& j, uint32_t replicas, omni_pass& p, double now_s, explained reason,
                           std::vector<command>& out, bool borrowed = false);
  void omni_claim_for_critical(const job_state& j, omni_pass& p, double now_s, std::vector<command>& out);
  void grow(double now_s, std::vector<command>& out);
  // `borrowed`: the run gives its GPUs back at once and has no run window (job_state::borrowed).
  void start(job_state& j, uint32_t replicas, double now_s, explained reason,
             std::vector<command>& out, bool borrowed = false);
  // Which running lower-class jobs reclaim may take: best-effort ones (they give way at once),
  // the ones that drain first (regular), or any.
  enum class victims : uint8_t { any, at_once, draining };
  uint32_t reclaim(const job_state& claimant, uint32_t deficit, double now_s,
                   std::vector<command>& out, victims which);
  // Jobs that give their GPUs back at once: best-effort work and borrowed runs.
  static bool gives_way_at_once(const job_state& j) {
    return j.req.klass == job_class::best_effort || j.borrowed;
  }
  // GPUs such jobs hold among `ids` (running_ or draining_).
  uint32_t gpus_giving_way(const std::set<std::string>& ids) const;
  bool may_preempt(const job_state& victim, const job_state& claimant, double now_s) const;
  bool may_shrink(const job_state& victim, const job_state& claimant) const;
  void notice(job_state& v, uint32_t keep, double now_s, explained reason,
              std::vector<command>& out);
  void complete_drain(job_state& v, double now_s);
  void to_pending(job_state& j);
  void set_phase(job_state& j, job_phase p);
  // Takes `it` (a pending job) out of jobs_ and out of the counts by class and phase.
  void erase_job(std::map<std::string, job_state>::iterator it);
  uint64_t& count_of(const job_state& j) {
    return by_class_phase_[std::min<size_t>(static_cast<size_t>(j.req.klass), 2)][static_cast<size_t>(j.phase)];
  }
  void evict_guest(const std::string& guest, double now_s, explained reason, eviction_cause cause,
                   std::vector<command>& out);
  void evict_guests_of(const std::string& host, double now_s, const explained& reason, eviction_cause cause,
                       std::vector<command>& out);
  // Evicts the guests of `host` its memory forecast no longer leaves room for; true when any.
  bool evict_for_memory(const job_state& host, double now_s, std::vector<command>& out);
  // Why guest `g` does not fit beside `host` (a memory hold), or reason none when it does.
  hold_note memory_misfit(const job_state& g, const job_state& host) const;
  void place_guests(const job_state& host, double share, double now_s, std::vector<command>& out);
  // Why `host` lends nothing in the next window (guest_share() is 0), for the decision log.
  explained no_lending_reason(const std::string& host) const;
  uint32_t draining_gpus() const;
  // omni's critical reserve (see scheduler_params::critical_peak_memory_s;
  // scheduler_reserve.cpp).
  void note_critical_demand(double now_s);
  uint32_t locked_regular_gpus() const;
  int64_t regular_room() const;

  scheduler_params params_;
  placement place_;
  std::map<std::string, job_state> jobs_;
  // Ids by phase, so that per-decision scans touch the jobs holding GPUs, not the queue.
  std::set<std::string> running_, draining_;
  std::set<queue_key> pending_;
  std::map<std::string, host_forecast> forecasts_;
  // host -> its guests, each on its own slice of the host's GPUs (packed up to all of them)
  std::map<std::string, std::vector<std::string>> guests_of_;
  std::deque<decision> log_;
  ended_jobs ended_;
  std::deque<std::pair<double, uint32_t>> critical_peak_;  // sliding-window max of critical demand
  uint32_t critical_peak_now_ = 0;
  double last_schedule_s_ = -1e300;
  uint64_t decisions_total_ = 0;
  uint64_t next_order_ = 0;
  uint64_t cross_switch_ = 0;
  uint64_t multi_node_ = 0;
  uint64_t reserve_deferrals_ = 0;
  uint64_t budget_holds_ = 0;
  uint64_t budget_hold_windows_ = 0;
  std::array<uint64_t, eviction_cause_count> evictions_{};
  uint64_t memory_skips_ = 0;
  uint64_t rejected_ = 0;
  class_phase_counts by_class_phase_{};
  uint64_t pass_ = 0;       // scheduling passes so far (hold_pass)
  uint64_t holds_total_ = 0;
  size_t pass_holds_ = 0;   // waiting jobs held in this pass so far
  hold_note tail_hold_;     // pending jobs a pass did not look at (it stopped early) wait for this
  hold_note grow_hold_;     // the reserve held back a shrunk job's growth in this pass
  std::string grow_hold_job_;
  hold_note cluster_hold_;  // held()
  std::string cluster_hold_job_;
};

}  // namespace msomni::sched
