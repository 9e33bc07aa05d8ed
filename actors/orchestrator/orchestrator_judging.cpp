// Judging each journaled step: non-finite and spiking training (training_health) and
// utilisation-driven scaling (autoscale_core); the shell carries out their verdicts through
// the elastic core (see orchestrator_state.hpp).
#include "orchestrator_state.hpp"

namespace msomni::orchestrator::shell {

// Every rank has the same all-reduced loss and gradient norm, so rank 0's record speaks for all.
void judge_health(actor self, shell_state& st, const msg::step_record& r, time_point now) {
  auto v = st.health.on_step(r.step, r.loss, r.grad_norm, r.optimizer_skipped);
  for (const auto& e : v.events) journal(st, e.kind, e.detail);
  if (v.action == health_verdict::act::roll_back) {
    auto acts = st.core.on_training_diverged(v.reason, now);
    if (!acts.empty()) st.health.on_rolled_back();
    execute(self, st, std::move(acts));
  } else if (v.action == health_verdict::act::stop) {
    execute(self, st, st.core.fail(v.reason));
  }
}

// One replica more or less through the same scale_to a user's scale-up / scale-down takes;
// every decision and refusal journaled.
void judge_utilisation(actor self, shell_state& st, const msg::step_record& r, time_point now) {
  if (st.core.epoch() != st.autoscale_epoch) {
    // The first epoch is the start, not a resize: no cooldown for it.
    if (st.autoscale_epoch != 0) st.autoscale.on_resized(now);
    st.autoscale_epoch = st.core.epoch();
  }
  const double busy = busy_share(r.step_time_ns / 1e6, r.data_wait_ns / 1e6, r.checkpoint_ns / 1e6);
  const auto d = st.autoscale.on_step(busy, now, st.core.world(), st.core.can_grow(), st.core.can_shrink());
  if (d.delta == 0) {
    if (!d.reason.empty()) journal(st, "autoscale_refused", d.reason);
    return;
  }
  auto o = st.core.scale_to(st.core.world() + d.delta, st.env.autoscale.grace_period, now);
  journal(st, o.ok ? "autoscale" : "autoscale_refused", d.reason + "; " + o.text);
  st.autoscale.on_resized(now);
  execute(self, st, std::move(o.actions));
}

std::string health_summary(const shell_state& st) {
  const auto& c = st.health.counts();
  if (c.nonfinite_steps == 0 && c.loss_spikes == 0) return "training stayed finite, no loss spikes";
  return std::to_string(c.nonfinite_steps) + " non-finite steps (" + std::to_string(c.skipped_steps) +
         " updates skipped), " + std::to_string(c.loss_spikes) + " loss spikes, " + std::to_string(c.rollbacks) +
         " rollbacks for them";
}

}  // namespace msomni::orchestrator::shell
