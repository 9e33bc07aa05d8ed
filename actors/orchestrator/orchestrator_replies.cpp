// What the orchestrator answers: `msomni status` (text and JSON), `msomni inspect` (the status,
// every metric family, the elastic timeline, the idle-window forecast, the memory view) and
// the control verbs (scale-down, scale-up, stop), each behind the run's token (see
// orchestrator_state.hpp).
#include "orchestrator_state.hpp"

#include "core/json_number.hpp"
#include "core/json_text.hpp"
#include "metrics/metrics_json.hpp"

namespace msomni::orchestrator::shell {

namespace {

// The core's status with the bad samples met so far (all ranks): by reason, and which.
ordered_json status_with_samples(const shell_state& st) {
  auto j = orchestrator::status_json(st.core.status(), st.progress.bad_samples_by_reason());
  j["bad_sample_list"] = bad_sample_list_json(st.bad_ledger.entries());
  j["bad_samples_unlisted_draws"] = st.bad_ledger.unlisted_draws();
  j["mismatched_names"] = st.progress.mismatched_names();
  return j;
}

std::string status_reply_json(const shell_state& st) { return json_text(status_with_samples(st)); }

// `msomni status` for a person: the core's lines, the bad samples by reason and which.
std::string status_reply_text(const shell_state& st) {
  std::string t = status_text(st.core.status()) + "  " + st.progress.bad_samples_summary() + "\n";
  for (const auto& l : bad_sample_lines(st.bad_ledger.entries(), st.bad_ledger.unlisted_draws(), 8)) t += "    " + l + "\n";
  if (const auto n = st.progress.mismatched_names())
    t += "  mismatched names " + std::to_string(n) + " (samples decoded by bytes of another format than their names say)\n";
  return t;
}

ordered_json predictor_json(const control_metrics& control) {
  const auto f = control.forecast();
  auto p = ordered_json::object();
  put_number(p, "idle_ratio", f.idle_mean);
  put_number(p, "confidence", f.confidence);
  put_number(p, "horizon_s", f.horizon_s);
  auto& windows = p["windows"] = ordered_json::array();
  for (const auto& w : f.windows) {
    ordered_json row = ordered_json::object();
    put_number(row, "start_in_s", w.start_in_s);
    put_number(row, "length_s", w.length_s);
    windows.push_back(std::move(row));
  }
  return p;
}

ordered_json memory_view_json(const shell_state& st) {
  const auto& ms = st.env.memory;
  auto memory = ordered_json::object();
  memory["predictor_enabled"] = ms.predictor_enabled;
  put_number(memory, "safety_margin_gb", ms.safety_margin_gb);
  put_number(memory, "device_memory_gb", ms.device_memory_gb);
  memory["horizon_steps"] = ms.horizon_steps;
  auto& events = memory["events"] = ordered_json::array();
  for (const auto& e : st.memory_events) events.push_back(e);
  return memory;
}

// What `msomni inspect` shows: the status (the same fields as `msomni status --json`), every
// metric family of the job, the elastic timeline and the job's idle-window forecast.
std::string inspect_reply_json(const shell_state& st) {
  auto j = status_with_samples(st);
  j["metrics"] = metrics::families_json(st.env.metrics->collect());
  auto& events = j["timeline"] = ordered_json::array();
  for (const auto& e : st.timeline) events.push_back(e);
  j["predictor"] = predictor_json(*st.control);
  j["memory"] = memory_view_json(st);
  return json_text(j);
}

}  // namespace

msg::control_reply handle_control(actor self, shell_state& st, const msg::control_request& r) {
  if (!same_token(r.token, st.env.token)) {
    journal(st, "control_refused", "a " + r.verb + " request without the run's token (from " + r.requested_by + ")");
    return {false, "refused: missing or wrong token (read it from the run directory's control.json)", ""};
  }
  const auto now = st.clock.now();
  if (r.verb == "status") return {true, status_reply_text(st), status_reply_json(st)};
  if (r.verb == "inspect") {
    if (!st.env.metrics)
      return {false, "refused: metrics are off for this job (set cluster.metrics_port to a port or \"auto\")", ""};
    return {true, "", inspect_reply_json(st)};
  }
  control_outcome o;
  if (r.verb == "scale-down" || r.verb == "scale-up") {
    const auto grace = std::chrono::duration_cast<nanos>(std::chrono::duration<double>(r.grace_period_s));
    o = r.verb == "scale-down" ? st.core.scale_down(r.replicas, grace, now) : st.core.scale_up(r.replicas, now);
  } else if (r.verb == "stop") {
    o = st.core.stop(now);
    if (o.ok) st.stops.requested();  // a later signal adds nothing: the job stops as `msomni stop` asked
  } else {
    return {false, "refused: unknown verb \"" + r.verb + "\" (status, inspect, scale-down, scale-up, stop)", ""};
  }
  const auto what = r.verb == "stop" ? r.verb : r.verb + " " + std::to_string(r.replicas);
  journal(st, o.ok ? "control" : "control_refused", what + " by " + r.requested_by + ": " + o.text);
  execute(self, st, std::move(o.actions));
  return {o.ok, o.text, status_reply_json(st)};
}

}  // namespace msomni::orchestrator::shell
