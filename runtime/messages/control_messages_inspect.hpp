// The inspect overloads of control_messages.hpp: what CAF needs to serialise those messages.
// Included by the catalog (messages/catalog.hpp); every translation unit that sends one of
// these messages sees it through the catalog (CAF refuses to compile a send without it).
#pragma once

#include "messages/control_messages.hpp"

#include <caf/meta/type_name.hpp>

namespace msomni::msg {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, heartbeat& x) {
  return f(caf::meta::type_name("heartbeat"), x.node, x.rank, x.epoch, x.seq, x.sent_at_ns);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_ready& x) {
  return f(caf::meta::type_name("rank_ready"), x.name, x.node, x.address, x.pid, x.has_checkpoint,
           x.checkpoint_step);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_world& x) {
  return f(caf::meta::type_name("join_world"), x.epoch, x.members, x.addresses, x.grad_accum, x.source,
           x.checkpoint_first, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_stalled& x) {
  return f(caf::meta::type_name("rank_stalled"), x.name, x.epoch, x.step, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_rejoin& x) {
  return f(caf::meta::type_name("rank_rejoin"), x.name, x.node, x.address, x.pid, x.epoch, x.members, x.rank,
           x.steps_done, x.training);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rejoin_answer& x) {
  return f(caf::meta::type_name("rejoin_answer"), x.adopted, x.recorded_step, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_failed& x) {
  return f(caf::meta::type_name("rank_failed"), x.name, x.epoch, x.step, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_left& x) {
  return f(caf::meta::type_name("rank_left"), x.name, x.epoch, x.final_step, x.reason, x.checksum,
           x.failed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scale_request& x) {
  return f(caf::meta::type_name("scale_request"), x.request_id, x.target_replicas,
           x.grace_period_s, x.requested_by);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scale_reply& x) {
  return f(caf::meta::type_name("scale_reply"), x.request_id, x.accepted, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_hello& x) {
  return f(caf::meta::type_name("agent_hello"), x.node, x.rack, x.switch_name, x.slots, x.pid);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_signalled& x) {
  return f(caf::meta::type_name("agent_signalled"), x.node, x.signal, x.source);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, spawn_rank& x) {
  return f(caf::meta::type_name("spawn_rank"), x.name, x.args);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_rank& x) {
  return f(caf::meta::type_name("stop_rank"), x.name, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_check_request& x) {
  return f(caf::meta::type_name("node_check_request"), x.level, x.config_name, x.config_text, x.overrides,
           x.checkpoint_dir);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_check_report& x) {
  return f(caf::meta::type_name("node_check_report"), x.node, x.report_json, x.probe_address);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_pair_probe& x) {
  return f(caf::meta::type_name("node_pair_probe"), x.pair, x.peer, x.peer_address, x.dial, x.elements, x.rounds);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_pair_result& x) {
  return f(caf::meta::type_name("node_pair_result"), x.pair, x.node, x.peer, x.median_ms, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_exited& x) {
  return f(caf::meta::type_name("rank_exited"), x.name, x.node, x.status, x.log_tail);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_request& x) {
  return f(caf::meta::type_name("control_request"), x.token, x.verb, x.replicas, x.grace_period_s,
           x.requested_by);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_reply& x) {
  return f(caf::meta::type_name("control_reply"), x.ok, x.text, x.json);
}

}  // namespace msomni::msg
