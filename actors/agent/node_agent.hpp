// The node agent: starts and stops the rank processes of its node for the orchestrator and
// heartbeats to it. The same actor runs inside msomni-run (the embedded single-node default)
// and inside msomni-agent (one per node of a multi-node run).
//
//   start --agent_hello--> orchestrator
//   spawn_rank --> msomni-rank process (log in log_dir/<name>.log, the job's token in its
//                  environment, and its local index MSOMNI_NODE_SLOT: the lowest slot no
//                  live rank holds, see node_slots.hpp); its end --> rank_exited
//   stop_rank  --> SIGKILL
//   every heartbeat_interval --> heartbeat; the orchestrator gone --> stop every rank, quit;
//                  or, following the job's leader (follow_leader), keep the ranks training,
//                  pause the heartbeats and wait for the shell to hand over the next leader:
//   leader_atom + the next leader's orchestrator --> agent_hello to it, heartbeats again
//   the agent's end --> its ranks are stopped, or left running when let_ranks_run is set
//                  (ranks that outlive it, for the next leader of a job with a control store)
//   node_check_request, node_pair_probe --> delegated to node_checker (the pre-flight of this
//                  node, msomni-agent's); without one, an empty report (the control process
//                  says the agent runs no checks)
#pragma once

#include "metrics/metrics_registry.hpp"

#include <caf/actor.hpp>
#include "messages/actor_interfaces.hpp"

#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace msomni::agent {

struct agent_settings {
  std::string node = "local";
  std::string rack = "rack0";
  std::string switch_name = "switch0";
  int64_t slots = 2;
  std::string rank_binary;  // msomni-rank
  std::string log_dir;      // rank logs
  std::string job_token;    // handed to each rank in its environment (job_token_env)
  std::chrono::milliseconds heartbeat_interval{10000};
  std::function<void()> on_orchestrator_lost;  // e.g. end the msomni-agent process
  std::shared_ptr<metrics::metrics_registry> metrics;  // the agent actor's accounting; null: metrics off
  caf::actor node_checker;  // answers the control process's pre-flight of this node; invalid: none
  // Ranks start with SIGTERM and SIGINT ignored: under Slurm, which signals every process of
  // the job's steps at once, the control process stops them at a barrier instead.
  bool ranks_ignore_stop_signals = false;
  // Ranks that outlive the agent ([control] store: they train on while no control process
  // runs): `outliving_logger` stamps each rank's output into its log (msomni-rank, run as
  // `--stamp-log LOG`); empty: ranks end with the agent. When the agent ends with
  // `let_ranks_run` set, its ranks are left running (for the next leader to adopt) instead of
  // being stopped.
  std::string outliving_logger;
  std::shared_ptr<std::atomic<bool>> let_ranks_run;
  // A job with a control store whose leader may change (msomni-agent): the orchestrator's loss
  // leaves the ranks training (they rejoin the next leader themselves) and the agent waits,
  // without heartbeats, for leader_atom. A rank that ends meanwhile is told to the next leader
  // after its agent_hello (the newest 64 such ends are held): the leader may have adopted it
  // before this agent found it.
  bool follow_leader = false;
  // How many rank processes of this node run now (kept by the agent; a rank counts until it
  // has been reaped and its end sent): for a caller that waits for its ranks to end. Null: not kept.
  std::shared_ptr<std::atomic<size_t>> live_ranks;
};

// To a following agent: (leader_atom, orchestrator) hands over the next leader;
// (leader_atom) alone says the current one is gone (the shell saw its node go down).
using leader_atom = caf::atom_constant<caf::atom("aleader")>;

// The agent as its own process sees it: the interface the orchestrator uses, and the leader
// hand-over above.
using node_agent_actor =
    msg::agent_actor::extend<caf::reacts_to<leader_atom, msg::orchestrator_actor>, caf::reacts_to<leader_atom>>;

node_agent_actor spawn_node_agent(caf::actor_system& sys, agent_settings s, msg::orchestrator_actor orchestrator);

// msomni-rank next to the running binary (or in ../msomni-rank/), or $MSOMNI_RANK_BINARY.
std::string find_rank_binary();

}  // namespace msomni::agent
