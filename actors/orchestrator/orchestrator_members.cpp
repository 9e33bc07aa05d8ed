// Agents and ranks arriving, leaving and dying: hellos, stop signals an agent reports, ranks
// ready or rejoining after a takeover, their leaves and exits, and the ends of the
// connections the shell watches (see orchestrator_state.hpp).
#include "orchestrator_state.hpp"

#include "core/log.hpp"

#include <caf/actor_cast.hpp>
#include <caf/system_messages.hpp>

#include <cstring>

namespace msomni::orchestrator::shell {

namespace {

// Watches the worker actor of rank `name` (a reconnecting member's old connection is no news).
void watch_worker(actor self, shell_state& st, const std::string& name, const msg::worker_actor& w) {
  if (const auto old = st.workers.find(name); old != st.workers.end() && old->second != w) {
    st.watched.erase(old->second.address());
    self->demonitor(old->second.address());
  }
  st.workers[name] = w;
  self->monitor(w);
  st.watched[w.address()] = {false, name};
}

}  // namespace

void on_agent_hello(actor self, const state_ptr& st, const msg::agent_hello& a) {
  auto agent = caf::actor_cast<msg::agent_actor>(self->current_sender());
  if (!agent) return;
  st->agents[a.node] = agent;
  self->monitor(agent);
  st->watched[agent.address()] = {true, a.node};
  if (st->node_checks && a.node != st->env.in_process_agent) {
    st->held_agents[a.node] = a;  // its node is checked first
    if (!st->gather_armed) {
      st->gather_armed = true;
      self->delayed_send(self, st->agent_gather, gather_deadline_atom::value);
    }
    run_node_checks(self, st, st->node_checks->on_agent(a.node));
    return;
  }
  admit_agent(self, *st, a);
}

// A stop as if this process had received the signal; from an agent of this job only.
void on_agent_signalled(actor self, shell_state& st, const msg::agent_signalled& a) {
  const auto agent = st.agents.find(a.node);
  if (agent == st.agents.end() || agent->second.address() != caf::actor_cast<caf::actor_addr>(self->current_sender())) {
    MSOMNI_LOG(warn, "orchestrator") << "agent_signalled from " << a.node << " dropped: not that node's agent";
    return;
  }
  if (const auto why = st.stops.on_agent_signal(a.node, a.signal, a.source); !why.empty())
    MSOMNI_LOG(warn, "orchestrator") << "agent_signalled from " << a.node << " dropped: " << why;
}

void on_rank_ready(actor self, shell_state& st, const msg::rank_ready& r) {
  msg::worker_actor w;
  try {
    w = st.env.worker_of(r.name);
  } catch (const std::exception& e) {
    execute(self, st, st.core.on_rank_down(r.name, std::string("unreachable: ") + e.what(), st.clock.now()));
    return;
  }
  st.workers[r.name] = w;
  self->monitor(w);
  st.watched[w.address()] = {false, r.name};
  execute(self, st, st.core.on_rank_ready(r, st.clock.now()));
}

// From a rank of the previous leader that trained on while the job had no leader.
void on_rank_rejoin(actor self, shell_state& st, const msg::rank_rejoin& r) {
  if (st.done) return;
  msg::worker_actor w;
  try {
    w = st.env.worker_of(r.name);
  } catch (const std::exception& e) {
    MSOMNI_LOG(warn, "orchestrator") << "rank_rejoin from " << r.name << " dropped: unreachable: " << e.what();
    return;
  }
  watch_worker(self, st, r.name, w);
  execute(self, st, st.core.on_rank_rejoin(r, st.clock.now()));
}

// Idempotent: a second report of a departed rank changes nothing. The core decides what the
// leave means, a failed one included (it ends the job).
void on_rank_left(actor self, shell_state& st, const msg::rank_left& r) {
  if (st.done) return;
  if (st.env.memory_predictor) self->send(st.env.memory_predictor, r);  // its forecast goes
  for (const auto& h : st.lineage.on_rank_left(r)) journal_step(self, st, h);
  execute(self, st, st.core.on_rank_left(r, st.clock.now()));
}

void on_rank_exited(actor self, shell_state& st, const msg::rank_exited& r) {
  const auto it = st.core.members().find(r.name);
  const bool known = it != st.core.members().end();
  // Nothing to recover once a rank has left (it gave its result), but a death by a signal
  // then is still a failure of that process, told and journaled.
  if (known && r.status < 0 && it->second.state == member_state::left) {
    const std::string what = r.name + " died by signal " + std::to_string(-r.status) + " (" + strsignal(-r.status) +
                             ") after its result" + (r.log_tail.empty() ? "" : "; log ends: " + r.log_tail);
    journal(st, "rank_crashed", what);
    if (st.env.on_rank_crash) st.env.on_rank_crash(what);
  }
  if (st.done) return;  // the job is over; ranks exiting now are not failures to recover from
  if (st.env.memory_predictor) self->send(st.env.memory_predictor, r);
  if (!known) return;
  const auto state = it->second.state;
  if (state == member_state::left || state == member_state::dead) return;
  const std::string why = r.status < 0 ? "killed by signal " + std::to_string(-r.status)
                                       : "exited with status " + std::to_string(r.status) + " without leaving";
  execute(self, st, st.core.on_rank_down(r.name, why + (r.log_tail.empty() ? "" : "; log ends: " + r.log_tail),
                                         st.clock.now()));
}

void on_down(actor self, shell_state& st, const caf::down_msg& d) {
  auto it = st.watched.find(d.source);
  if (it == st.watched.end()) return;
  const auto [is_agent, name] = it->second;
  st.watched.erase(it);
  if (st.done) return;
  const auto now = st.clock.now();
  if (is_agent) {
    st.agents.erase(name);
    st.held_agents.erase(name);  // its pending check answers with an error
    execute(self, st, st.core.on_agent_down(name, "connection lost: " + caf::to_string(d.reason), now));
  } else if (d.reason != caf::exit_reason::normal) {
    // Its process may live on (its agent reports an exit, and that comes as rank_exited):
    // the core gives it its reconnect window.
    execute(self, st, st.core.on_rank_unreachable(name, "connection lost: " + caf::to_string(d.reason), now));
  }
}

}  // namespace msomni::orchestrator::shell
