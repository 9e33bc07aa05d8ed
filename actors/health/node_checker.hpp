// The node checker: the actor through which an msomni-agent answers the control process's
// pre-flight of its node. The checks block for seconds, so they run on a worker thread of its
// own, one request at a time, and the agent's actor keeps heartbeating meanwhile.
//
//   node_check_request --> run_health_checks on this node with the job's config text
//                          --> node_check_report (the report's JSON and the pair probe's address)
//   node_pair_probe    --> a timed ring all-reduce with the other node's checker over this
//                          checker's own transport hub --> node_pair_result
//
// The pair probe's hub ("probe-NODE") listens on the agent's interface, proves the job's
// token like every node of the job, and is made at the first node check.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <string>

namespace msomni::health {

struct node_checker_settings {
  std::string node;         // the agent's --node
  std::string listen_host;  // where the other nodes can reach this one
  std::string secret;       // the job's token
  std::string peer_binary;  // msomni-health-peer; empty: found beside this program
};

caf::actor spawn_node_checker(caf::actor_system& sys, node_checker_settings s);

// The transport name of a node's pair probe.
std::string probe_name(const std::string& node);

}  // namespace msomni::health
