// The pre-flight of the agents' nodes (health.preflight with [[cluster.nodes]]): carries out
// node_check_core's actions (check requests and pair probes to the agents, whose answers go
// back to it), admits the agents it passes to the elastic core, and ends the job when the
// pre-flight fails (see orchestrator_state.hpp).
#include "orchestrator_state.hpp"

#include <caf/actor_system.hpp>

namespace msomni::orchestrator::shell {

namespace {

namespace nc = health::node_checks;

// How long an agent may take over its node's checks (full level included), and one pair.
constexpr auto node_check_timeout = std::chrono::seconds(300);
constexpr auto pair_probe_timeout = std::chrono::seconds(90);

std::string pass_list(const nlohmann::ordered_json& report) {
  std::string out;
  for (const auto& n : report.value("nodes", nlohmann::ordered_json::array()))
    out += (out.empty() ? "" : ", ") + n.value("node", "?") + " " + n.value("verdict", "?");
  if (report.contains("multinode")) out += "; multinode " + report["multinode"].value("verdict", "?");
  return out;
}

void ask_check(actor self, const state_ptr& st, const nc::ask_check& c) {
  const auto node = c.node;
  const auto it = st->agents.find(node);
  if (it == st->agents.end()) {
    run_node_checks(self, st, st->node_checks->on_no_report(node, "the agent is gone"));
    return;
  }
  self->request(it->second, node_check_timeout, st->preflight->request)
      .then(
          [self, st, node](const msg::node_check_report& r) {
            auto acts = st->node_checks->on_report(node, r.report_json, r.probe_address);
            journal(*st, "node_checked", node + ": " + st->node_checks->verdict_of(node), "", node);
            run_node_checks(self, st, std::move(acts));
          },
          [self, st, node](const caf::error& e) {
            run_node_checks(self, st, st->node_checks->on_no_report(node, self->system().render(e)));
          });
}

void ask_pair(actor self, const state_ptr& st, const nc::ask_pair& p) {
  const auto& s = st->preflight->settings;
  for (const bool dial : {false, true}) {
    const auto node = dial ? p.dialer : p.listener;
    const auto pair = p.pair;
    msg::node_pair_probe probe{pair, dial ? p.listener : p.dialer, dial ? p.listener_address : p.dialer_address, dial,
                               s.pair_elements, s.pair_rounds};
    const auto it = st->agents.find(node);
    if (it == st->agents.end()) {
      run_node_checks(self, st, st->node_checks->on_pair_result(pair, node, 0, "the agent is gone"));
      continue;
    }
    self->request(it->second, pair_probe_timeout, std::move(probe))
        .then(
            [self, st, node](const msg::node_pair_result& r) {
              run_node_checks(self, st, st->node_checks->on_pair_result(r.pair, node, r.median_ms, r.error));
            },
            [self, st, node, pair](const caf::error& e) {
              run_node_checks(self, st, st->node_checks->on_pair_result(pair, node, 0, self->system().render(e)));
            });
  }
}

// A held agent is still connected: its loss erases it here.
void admit_held(actor self, shell_state& st, const std::string& node) {
  const auto it = st.held_agents.find(node);
  if (it == st.held_agents.end()) return;
  const auto hello = it->second;
  st.held_agents.erase(it);
  admit_agent(self, st, hello);
}

// True when the pre-flight failed and the job ended.
bool report_done(actor self, shell_state& st, const nc::done& d) {
  if (st.preflight->on_report) st.preflight->on_report(d.report);
  journal(st, "preflight_nodes",
          "pre-flight of the agents' nodes: " + d.report.value("job_verdict", "?") + " (" + pass_list(d.report) + ")" +
              (d.failed ? ": " + d.reason : ""));
  if (!d.failed) return false;
  st.preflight_failed = true;
  execute(self, st, {finish_job{false, "pre-flight failed on an agent's node, no rank was started: " + d.reason}});
  return true;
}

}  // namespace

// An agent joins the elastic core: it offers its slots.
void admit_agent(actor self, shell_state& st, const msg::agent_hello& a) {
  execute(self, st, st.core.on_agent({a.node, a.rack, a.switch_name, a.slots, true}, st.clock.now()));
}

void run_node_checks(actor self, const state_ptr& st, std::vector<nc::action> acts) {
  for (auto& a : acts) {
    if (st->done) return;
    if (auto* c = std::get_if<nc::ask_check>(&a)) ask_check(self, st, *c);
    else if (auto* p = std::get_if<nc::ask_pair>(&a)) ask_pair(self, st, *p);
    else if (auto* ad = std::get_if<nc::admit>(&a)) admit_held(self, *st, ad->node);
    else if (auto* r = std::get_if<nc::refuse>(&a))
      journal(*st, "node_refused", r->node + " failed its pre-flight and gets no rank: " + r->reason, "", r->node);
    else if (auto* d = std::get_if<nc::done>(&a); d && report_done(self, *st, *d)) return;
  }
}

// The initial node check goes on without the listed nodes whose agent never came.
void on_gather_deadline(actor self, const state_ptr& st) {
  if (st->done || !st->node_checks) return;
  auto acts = st->node_checks->on_gather_deadline();
  for (const auto& node : st->node_checks->missing())
    journal(*st, "node_missing",
            node + " is listed in [[cluster.nodes]] but its agent did not join within " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(st->agent_gather).count()) +
                " s of the first; the pre-flight goes on without it (it is checked when it joins)",
            "", node);
  run_node_checks(self, st, std::move(acts));
}

}  // namespace msomni::orchestrator::shell
