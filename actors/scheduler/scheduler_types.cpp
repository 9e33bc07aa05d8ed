// Names of the scheduler's enums, for logs, JSON and the command line.
#include "scheduler_types.hpp"

#include <algorithm>

namespace msomni::sched {

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

host_forecast host_forecast_of(const predict::idle_forecast& f) {
  return {f.idle_mean, f.lendable_share, f.last_idle, f.confidence, f.phase_share, f.rhythm_idle};
}

host_forecast host_forecast_of(const predict::idle_forecast& f, const predict::step_stats& st, size_t warmup_steps) {
  host_forecast h = host_forecast_of(f);
  h.samples = st.samples;
  h.warmup_samples = std::max<size_t>(warmup_steps, 1);
  h.step_cv = st.step_mean_s > 0 ? st.step_std_s / st.step_mean_s : 0;
  return h;
}

}  // namespace msomni::sched
