// Names of the scheduler's enums, for logs, JSON and the command line.
#include "scheduler_types.hpp"

#include <cstdio>

namespace msomni::sched {

const char* to_string(job_class c) {
  switch (c) {
    case job_class::critical: return "critical";
    case job_class::regular: return "regular";
    case job_class::best_effort: return "best_effort";
  }
  return "?";
}

const char* to_string(policy_kind p) {
  switch (p) {
    case policy_kind::omni: return "omni";
    case policy_kind::exclusive: return "exclusive";
    case policy_kind::greedy: return "greedy";
  }
  return "?";
}

bool parse_policy(const std::string& text, policy_kind& out) {
  if (text == "omni") out = policy_kind::omni;
  else if (text == "exclusive") out = policy_kind::exclusive;
  else if (text == "greedy") out = policy_kind::greedy;
  else return false;
  return true;
}

const char* to_string(command_kind k) {
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

const char* to_string(hold_reason r) {
  switch (r) {
    case hold_reason::none: return "none";
    case hold_reason::cluster_full: return "cluster_full";
    case hold_reason::queue_order: return "queue_order";
    case hold_reason::critical_waits: return "critical_waits";
    case hold_reason::critical_reserve: return "critical_reserve";
    case hold_reason::run_window: return "run_window";
    case hold_reason::draining: return "draining";
    case hold_reason::below_threshold: return "below_threshold";
    case hold_reason::low_confidence: return "low_confidence";
    case hold_reason::over_budget: return "over_budget";
    case hold_reason::queue_bound: return "queue_bound";
    case hold_reason::memory: return "memory";
  }
  return "?";
}

const char* to_string(eviction_cause c) {
  switch (c) {
    case eviction_cause::memory: return "memory";
    case eviction_cause::lending: return "lending";
    case eviction_cause::free_gpus: return "free_gpus";
    case eviction_cause::host_ended: return "host_ended";
  }
  return "?";
}

std::string gb_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

std::string explain(const hold_note& h) {
  const std::string free = std::to_string(h.gpus_free), wanted = std::to_string(h.gpus_wanted);
  std::string text = std::string(to_string(h.reason)) + ": ";
  switch (h.reason) {
    case hold_reason::none: return "none";
    case hold_reason::cluster_full:
      return text + "needs " + wanted + " GPUs, " + free + " free and none it may take";
    case hold_reason::queue_order: return text + "behind " + h.by + ", which waits first";
    case hold_reason::critical_waits:
      return text + "the GPUs are owed to waiting critical job " + h.by + "; " + free +
             " free are fewer than the " + wanted + " it needs to borrow them";
    case hold_reason::critical_reserve:
      return text + free + " free GPUs are kept in the critical reserve (" + std::to_string(h.reserve) +
             " GPUs for critical bursts); it needs " + wanted + " beside it";
    case hold_reason::run_window:
      return text + "needs " + wanted + " GPUs; the rest are held by regular jobs inside their run window (" +
             h.by + " first)";
    case hold_reason::draining:
      return text + "needs " + wanted + " GPUs, " + free + " free; waits for those its notices asked back";
    case hold_reason::below_threshold:
      return text + h.by + "'s predicted idle share is below idle_threshold: it lends nothing to guests";
    case hold_reason::low_confidence:
      return text + h.by + " has no forecast at min_confidence yet: it lends nothing to guests";
    case hold_reason::over_budget:
      return text + h.by + " is past its slowdown budget: it lends nothing to guests";
    case hold_reason::queue_bound:
      return text + "the queue holds " + wanted + " jobs, its queue_capacity: submissions are refused";
    case hold_reason::memory:
      return text + h.by + "'s memory forecast leaves " + gb_text(static_cast<double>(h.headroom_bytes)) +
             " of its " + gb_text(static_cast<double>(h.device_bytes)) + " device; it needs " +
             gb_text(static_cast<double>(h.need_bytes)) + " as a guest";
  }
  return text;
}

host_forecast host_forecast_of(const predict::idle_forecast& f) {
  return {f.idle_mean, f.lendable_share, f.last_idle, f.confidence, f.phase_share, f.rhythm_idle};
}

}  // namespace msomni::sched
