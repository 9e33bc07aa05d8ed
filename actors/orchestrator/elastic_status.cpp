// elastic_core, what `msomni status` shows: the phase names and the plain status (the shell
// formats it as JSON, orchestrator_json.hpp).
#include "elastic_core.hpp"

#include <sstream>

namespace msomni::orchestrator {

const char* elastic_core::to_string(phase p) {
  switch (p) {
    case phase::starting: return "starting";
    case phase::running: return "running";
    case phase::shrinking: return "shrinking";
    case phase::growing: return "growing";
    case phase::recovering: return "recovering";
    case phase::stopping: return "stopping";
    case phase::done: return "done";
  }
  return "?";
}

job_status elastic_core::status() const {
  job_status j;
  j.phase = to_string(phase_);
  j.epoch = epoch_;
  j.step = last_step_;
  j.total_steps = s_.total_steps;
  j.world = world();
  j.target = target_;
  j.grad_accum = grad_accum_for(world()).value_or(0);
  for (const auto& [n, m] : members_)
    j.ranks.push_back({n, m.node, m.pid, m.state, m.state == member_state::active ? last_step_ : 0});
  for (const auto& [n, a] : agents_) j.agents.push_back(a);
  return j;
}

std::string status_text(const job_status& s) {
  std::ostringstream t;
  t << "job " << s.phase << ": step " << s.step << "/" << s.total_steps << ", " << s.world << " replicas (target "
    << s.target << "), epoch " << s.epoch << "\n";
  for (const auto& r : s.ranks)
    t << "  " << r.name << "  node " << r.node << "  pid " << r.pid << "  " << to_string(r.state) << "\n";
  return t.str();
}

}  // namespace msomni::orchestrator
