// The orchestrator's actor shell: receives what happens (agents, ranks, step records, downs,
// control requests, its own ticks), hands it to elastic_core with the time, and carries out
// the actions (plans to the ranks' "worker" actors, spawn/stop through node agents, journal
// lines, the end of the job). Everything outside the actor system is injected.
#pragma once

#include "elastic_core.hpp"
#include "memory_fit_replay.hpp"
#include "run_journal.hpp"
#include "run_summary.hpp"
#include "autoscale_core.hpp"
#include "training_health.hpp"

#include "node_check_core.hpp"
#include "messages/control_messages.hpp"

#include "core/clock.hpp"
#include "metrics/job_metrics_collector.hpp"

#include "messages/actor_interfaces.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace msomni::orchestrator {

// How the job ended, handed to on_finish once.
struct job_outcome {
  bool ok = true;
  bool stopped = false;  // asked to stop (resumable), not trained to its last step
  bool preempted = false;  // stopped, and the first stop asked was SIGTERM (a manager's)
  bool preflight_failed = false;  // an agent's node failed its pre-flight: no rank started
  bool deposed = false;  // this control process lost the job's leadership in the control store
  std::string reason;    // the finish reason alone
  std::string text;      // the reason and the end-of-job lines (progress, bad samples, data, checkpoint)
  run_facts facts;       // for summary.json
};

struct orchestrator_env {
  std::function<msg::worker_actor(const std::string& rank)> worker_of;    // the rank's "worker" actor
  std::function<std::vector<std::string>(const std::string& rank)> rank_args;  // msomni-rank arguments
  std::function<uint64_t()> latest_checkpoint_step;                       // 0 when there is none
  std::function<void(const job_outcome&)> on_finish;
  // A rank that had given its result (it left, or the job was over) then died by a signal:
  // what happened, for the end of the run (a crash in teardown can hide corruption before it).
  std::function<void(const std::string& what)> on_rank_crash;
  run_journal* journal = nullptr;
  std::string token;
  std::atomic<bool>* stop_signal = nullptr;  // set by SIGINT/SIGTERM: stop gracefully
  const std::atomic<int>* stop_signal_number = nullptr;  // which of the two (SIGTERM: preempted)
  // Set when another control process leads the job now ([control] store): stop gracefully,
  // the new leader resumes it. Null: no store.
  const std::atomic<bool>* deposed = nullptr;
  const std::string* deposed_why = nullptr;  // why, once *deposed is set
  // [control] store: the ranks outlive this process and follow the job's leader. A deposed
  // leader then leaves them training for the next one (which adopts them) instead of stopping
  // them; a takeover sets recorded_step, the last step the job's metrics.jsonl holds, so that
  // records an adopted rank sends again are written once.
  bool ranks_follow_leader = false;
  uint64_t recorded_step = 0;
  // A run over earlier attempts: the last step their metrics.jsonl holds. A first record past
  // the next step journals the steps between as steps_unrecorded.
  std::optional<uint64_t> metrics_last_step;
  // Handed to the core (elastic_settings says what they mean): heartbeat_interval x misses,
  // and the node agent living in this process, if any.
  nanos agent_silence_limit{std::chrono::seconds(30)};
  std::string in_process_agent;
  // How long a rank whose connection dropped keeps its place to reconnect (elastic_settings).
  nanos reconnect_window{0};
  // cluster.release_idle_nodes: gives a node no rank needs any more back to the cluster's
  // engine; "" when it took it, else why not. Null: nodes are kept to the end.
  std::function<std::string(const std::string& node)> release_node;
  bool progress_on_tty = false;
  health_settings health;  // non-finite steps and loss spikes
  autoscale_settings autoscale;  // utilisation-driven scaling (off unless enabled)
  double max_data_wait_ms = 200;  // a step waiting longer for data is journaled (slow_data)
  // The job's metrics (cluster.metrics_port): the shell keeps the control series in its
  // registry, takes the ranks' and agents' pushed reports, and answers "inspect" from it.
  // Null: metrics are off, pushed reports are dropped and "inspect" is refused.
  std::shared_ptr<metrics::job_metrics_collector> metrics;
  std::string job_name;
  // The memory watermark predictor (memory.predictor_enabled): every accepted step sample
  // goes to it, and its msg::memory_advice comes back to be journaled. Invalid: off.
  msg::memory_predictor_actor memory_predictor;
  // The memory fit decisions of the run's earlier attempts (from its events.jsonl); the shell
  // adds this attempt's and sends a rank those of its slot before a plan that restores a
  // checkpoint. Null: none yet.
  std::shared_ptr<memory_fit_replay> fit_replay;
  // The [memory] settings the "inspect" reply carries, so `msomni inspect` can set a rank's
  // forecast plus the margin against its budget.
  struct memory_settings {
    bool predictor_enabled = false;
    double safety_margin_gb = 0, device_memory_gb = 0;
    int64_t horizon_steps = 0;
  } memory;
};

// The pre-flight of the agents' nodes (health.preflight with [[cluster.nodes]]): each agent
// that joins is asked to check its node (`request`), and the elastic core sees it only once
// node_check_core admits it; the combined report goes to on_report (preflight.json).
struct node_preflight {
  health::node_check_settings settings;
  nlohmann::ordered_json control_report;  // this node's own pre-flight
  msg::node_check_request request;
  std::function<void(const nlohmann::ordered_json&)> on_report;
};

msg::orchestrator_actor spawn_orchestrator(caf::actor_system& sys, elastic_settings s, orchestrator_env env,
                              std::optional<node_preflight> node_checks = std::nullopt);

// Constant-time comparison for the control token.
bool same_token(const std::string& a, const std::string& b);

}  // namespace msomni::orchestrator
