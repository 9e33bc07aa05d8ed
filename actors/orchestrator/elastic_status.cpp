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
  for (const auto& [n, m] : members_) {
    if (m.state == member_state::left || m.state == member_state::dead)
      j.departed.push_back({n, m.node, m.pid, m.state, m.departed_step});
    else
      j.ranks.push_back({n, m.node, m.pid, m.state, m.state == member_state::active ? last_step_ : 0});
  }
  for (const auto& [n, a] : agents_) j.agents.push_back(a);
  return j;
}

std::string status_text(const job_status& s) {
  std::ostringstream t;
  t << "job " << s.phase << ": step " << s.step << "/" << s.total_steps << ", " << s.world << " replicas (target "
    << s.target << "), epoch " << s.epoch << "\n";
  t << "ranks:\n";
  if (s.ranks.empty()) t << "  (none)\n";
  for (const auto& r : s.ranks)
    t << "  " << r.name << "  node " << r.node << "  pid " << r.pid << "  " << to_string(r.state) << "  step " << r.step
      << "\n";
  t << "agents:\n";
  if (s.agents.empty()) t << "  (none)\n";
  for (const auto& a : s.agents)
    t << "  " << a.node << "  rack " << a.rack << "  switch " << a.switch_name << "  slots " << a.slots << "  "
      << (a.alive ? "alive" : "down") << "\n";
  if (!s.departed.empty()) {
    t << "history (departed ranks):\n";
    for (const auto& r : s.departed)
      t << "  " << r.name << "  node " << r.node << "  pid " << r.pid << "  " << to_string(r.state) << " at step "
        << r.step << "\n";
  }
  return t.str();
}

}  // namespace msomni::orchestrator
