// Names of the scheduler's enums, for logs, JSON and the command line.
#include "scheduler_types.hpp"

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
  }
  return "?";
}

host_forecast host_forecast_of(const predict::idle_forecast& f) {
  return {f.idle_mean, f.lendable_share, f.last_idle, f.confidence, f.phase_share, f.rhythm_idle};
}

}  // namespace msomni::sched
