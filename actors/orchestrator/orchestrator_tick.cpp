// The orchestrator's tick (every tick_interval): this process's own pauses, the stop a signal
// or the loss of the leadership asks for (stop_precedence decides which and how it is named),
// the elastic core's timeouts, nodes given back to the cluster, the control series (see
// orchestrator_state.hpp).
#include "orchestrator_state.hpp"

namespace msomni::orchestrator::shell {

namespace {

// A gap between ticks this long is a pause of this process: a quarter of the silence that
// declares an agent down, at least 2 s.
nanos own_pause_limit(nanos silence) { return std::max<nanos>(std::chrono::seconds(2), silence / 4); }

stop_inputs stop_inputs_of(const shell_state& st) {
  stop_inputs in;
  in.own_signal = st.env.stop_signal && *st.env.stop_signal;
  in.own_signal_number = in.own_signal && st.env.stop_signal_number ? st.env.stop_signal_number->load() : 0;
  in.deposed = st.env.deposed && *st.env.deposed;
  if (in.deposed && st.env.deposed_why) in.deposed_why = *st.env.deposed_why;
  in.ranks_follow_leader = st.env.ranks_follow_leader;
  return in;
}

// True when the job was handed over to the next leader (nothing more to do on this tick).
bool carry_out_stop(actor self, shell_state& st, time_point now) {
  const auto d = st.stops.next(stop_inputs_of(st));
  if (d.what == stop_decision::kind::hand_over) {
    st.stops.sent(d);
    journal(st, "deposed", d.detail);
    execute(self, st, {finish_job{true, d.finish_reason, true}});
    return true;
  }
  if (d.what == stop_decision::kind::stop) {
    auto o = st.core.stop(now);
    if (o.ok) {
      st.stops.sent(d);
      journal(st, "stop", d.detail + " received: " + o.text);
      execute(self, st, std::move(o.actions));
    }
  }
  return false;
}

// cluster.release_idle_nodes: each node no rank needs any more is offered back once.
void release_idle_nodes(actor self, shell_state& st) {
  if (!st.env.release_node) return;
  for (const auto& node : st.core.idle_nodes()) {
    if (!st.release_tried.insert(node).second) continue;
    const auto err = st.env.release_node(node);
    if (!err.empty()) {
      journal(st, "node_release_failed", node + " holds no rank but stays with the job: " + err, "", node);
      continue;
    }
    journal(st, "node_released", node + " holds no rank after the scale-down and was given back to the cluster", "", node);
    execute(self, st, st.core.on_agent_released(node));
  }
}

}  // namespace

void on_tick(actor self, shell_state& st) {
  stop_if_journal_failed(self, st);
  if (st.done) return;
  const auto now = st.clock.now();
  // Ticks come every tick_interval; a gap past own_pause_limit is this process standing
  // still, and its peers' silence in it is not theirs.
  if (st.last_tick && now - *st.last_tick > own_pause_limit(st.env.agent_silence_limit))
    execute(self, st, st.core.on_own_pause(now - *st.last_tick - tick_interval, now));
  st.last_tick = now;
  if (carry_out_stop(self, st, now)) return;
  execute(self, st, st.core.on_tick(now));
  release_idle_nodes(self, st);
  if (st.control) st.control->on_status(st.core.status(), st.core.recoveries());
  forget_departed_sources(st);
  self->delayed_send(self, tick_interval, tick_atom::value);
}

}  // namespace msomni::orchestrator::shell
