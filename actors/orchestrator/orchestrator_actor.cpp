// orchestrator_actor (see orchestrator_actor.hpp): the behaviour hands each message to the
// function that takes it (orchestrator_state.hpp lists the files, one per purpose).
#include "orchestrator_state.hpp"

#include <caf/actor_system.hpp>
#include <openssl/crypto.h>

namespace msomni::orchestrator {

namespace shell {

shell_state::shell_state(elastic_settings s, orchestrator_env e)
    : core(s), progress(s.total_steps), data(e.max_data_wait_ms), health(e.health), autoscale(e.autoscale),
      tally(s.total_steps), env(std::move(e)), agent_gather(s.agent_gather) {
  if (env.metrics) control = std::make_unique<control_metrics>(*env.metrics->own(), env.job_name);
  memory = make_memory_hook(env.journal, env.metrics ? env.metrics->own() : nullptr);
  if (!env.fit_replay) env.fit_replay = std::make_shared<memory_fit_replay>();
  if (env.metrics_last_step) progress.expect_after(*env.metrics_last_step);
}

namespace {

orchestrator_impl::behavior_type orchestrator(actor self, state_ptr st) {
  self->account_as("orchestrator", st->env.metrics ? st->env.metrics->own() : nullptr);
  // Every outcome of a memory fit is a series from the start, at 0 until it happens.
  if (st->env.metrics)
    for (const char* result : {"unfit", "keyframe", "split", "unchanged"})
      st->env.metrics->own()->counter("msomni_memory_fits_total", {{"result", result}});
  self->set_down_handler([self, st](caf::down_msg& d) { on_down(self, *st, d); });
  self->delayed_send(self, tick_interval, tick_atom::value);
  return {
      [self, st](const msg::agent_hello& a) { on_agent_hello(self, st, a); },
      // From a node agent whose processes the cluster's engine signalled: a stop as if this
      // process had received the signal. From an agent of this job only, and the first counts.
      [self, st](const msg::agent_signalled& a) { on_agent_signalled(self, *st, a); },
      // From a node agent, every heartbeat_interval_s; idempotent (the core keeps the latest).
      [st](const msg::heartbeat& h) { st->core.on_heartbeat(h.node, st->clock.now()); },
      [self, st](const msg::rank_ready& r) { on_rank_ready(self, *st, r); },
      [self, st](const msg::rank_rejoin& r) { on_rank_rejoin(self, *st, r); },
      [self, st](msg::step_record r) { on_step_record(self, *st, std::move(r)); },
      // Acknowledged, so the rank knows before its process ends that its leave arrived.
      [self, st](const msg::rank_left& r) {
        on_rank_left(self, *st, r);
        return true;
      },
      [st](const msg::bad_samples_seen& m) {
        for (auto& note : st->bad_ledger.on_seen(m)) journal(*st, "bad_sample", note);
      },
      [st](const msg::checkpoint_done& d) { on_checkpoint_done(*st, d); },
      [self, st](const msg::rank_stalled& r) { execute(self, *st, st->core.on_rank_stalled(r, st->clock.now())); },
      // From a rank that cannot go on, before it exits; idempotent (the core ignores a rank
      // already down). Acknowledged so the rank knows its reason arrived.
      [self, st](const msg::rank_failed& r) {
        if (!st->done) execute(self, *st, st->core.on_rank_failed(r, st->clock.now()));
        return true;
      },
      [self, st](const msg::rank_exited& r) { on_rank_exited(self, *st, r); },
      [self, st](const msg::control_request& r) { return handle_control(self, *st, r); },
      [st](const msg::metrics_report& r) { take_report(*st, r); },
      [self, st](const msg::memory_sample& s) { on_memory_sample(self, *st, s); },
      // From the memory watermark predictor: a coming step of a rank will not fit; on to the rank.
      [self, st](const msg::memory_fit& f) {
        if (st->done) return;
        if (auto it = st->workers.find(f.rank_name); it != st->workers.end()) self->send(it->second, f);
      },
      [st](const msg::memory_fit_done& d) { on_memory_fit_done(*st, d); },
      [st](const msg::memory_advice& a) { on_memory_advice(*st, a); },
      [self, st](gather_deadline_atom) { on_gather_deadline(self, st); },
      [self, st](tick_atom) { on_tick(self, *st); },
  };
}

}  // namespace

}  // namespace shell

// Constant time, by the comparison the transport's peer authentication uses.
bool same_token(const std::string& a, const std::string& b) {
  return a.size() == b.size() && !b.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

msg::orchestrator_actor spawn_orchestrator(caf::actor_system& sys, elastic_settings s, orchestrator_env env,
                              std::optional<node_preflight> node_checks) {
  s.agent_silence_limit = env.agent_silence_limit;
  s.in_process_agent = env.in_process_agent;
  s.reconnect_window = env.reconnect_window;
  auto st = std::make_shared<shell::shell_state>(s, std::move(env));
  if (node_checks) {
    st->node_checks = std::make_unique<health::node_check_core>(node_checks->settings, node_checks->control_report);
    st->preflight = std::move(node_checks);
  }
  return sys.spawn(shell::orchestrator, st);
}

}  // namespace msomni::orchestrator
