// The pieces of msomni-run's control process that launch_job.cpp wires together: the job's
// metrics endpoint and token, the control node, the orchestrator's settings and memory
// predictor, the agents' pre-flight, a takeover's inheritance, the node agents, and the end of
// the run (state, summary, the lines for a person).
#pragma once

#include "control_election.hpp"
#include "run_options.hpp"
#include "run_paths.hpp"
#include "slurm_launch.hpp"

#include "config/job_config.hpp"
#include "hub/transport_hub.hpp"
#include "metrics/job_metrics_collector.hpp"
#include "metrics/metrics_endpoint.hpp"
#include "node_agent.hpp"
#include "orchestrator_actor.hpp"
#include "run_journal.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace msomni::apps {

// cluster.metrics_port: the job's /metrics, served here for every process of the job (ranks
// and agents push theirs to the orchestrator).
struct served_metrics {
  std::shared_ptr<metrics::job_metrics_collector> job;
  std::unique_ptr<metrics::metrics_endpoint> http;
  std::string address() const { return http ? http->address() : ""; }
};

// Ranks that died by a signal after their result. Shared, not on the stack: the orchestrator
// may report a crash while the system winds down.
struct crash_list {
  std::mutex mutex;
  std::vector<std::string> what;
};

served_metrics serve_metrics(const config::job_config& cfg, orchestrator::run_journal& journal);

// The job's token: the msomni CLI sends it with its requests, and every peer of the control
// node (agents, ranks, the CLI) proves it in its UCX hello. A takeover keeps its predecessor's.
std::string job_token(const std::filesystem::path& run_dir, bool takeover, orchestrator::run_journal& journal);

transport::ucx_node_options control_node_options(const config::job_config& cfg, const std::string& token);

// The memory fit decisions of the earlier attempts: the steps they changed run the same way
// again after the checkpoint.
std::shared_ptr<orchestrator::memory_fit_replay> earlier_fits(const std::filesystem::path& run_dir, orchestrator::run_journal& journal);

// The settings of the orchestrator that do not depend on what runs (the callbacks are set by
// the caller).
void settle_env(orchestrator::orchestrator_env& env, const config::job_config& cfg, control_role* control,
                const served_metrics& served);

// memory.predictor_enabled: the job's memory watermark predictor, fed by the orchestrator.
msg::memory_predictor_actor start_memory_predictor(caf::actor_system& sys, const config::job_config& cfg, const served_metrics& served);

// With [[cluster.nodes]] and the pre-flight on, every agent's node is checked before it gets a
// rank; the combined report replaces preflight.json.
std::optional<orchestrator::node_preflight> agents_preflight(const config::job_config& cfg, const run_options& opts,
                                                             const run_paths& paths,
                                                             const nlohmann::ordered_json& preflight);

// A takeover goes on with the job as its predecessors left it: the recoveries they spent (the
// budget is the job's), the epochs they used (one epoch history) and the replicas of their
// last completed resize (a resize they did not complete is dropped).
void continue_takeover(orchestrator::elastic_settings& elastic, orchestrator::orchestrator_env& env,
                       const control_role& control, const config::job_config& cfg, const std::filesystem::path& run_dir,
                       uint64_t metrics_last);

// The node agents: in this process for a single node, with srun on a Slurm allocation, or
// started by a person on each listed node (their commands printed). The in-process agent, if any.
agent::node_agent_actor start_agents(caf::actor_system& sys, const config::job_config& cfg, const std::filesystem::path& run_dir,
                        const std::string& token, const served_metrics& served, control_role* control,
                        const slurm_plan* slurm, const msg::orchestrator_actor& orchestrator, const std::string& address,
                        orchestrator::run_journal& journal, std::unique_ptr<slurm_agent_step>& agent_step,
                        const std::shared_ptr<std::atomic<bool>>& let_ranks_run,
                        const std::shared_ptr<std::atomic<size_t>>& local_ranks);

// How the run ended (launch_plan's decide_run_end): summary.json and summary.txt, the end in
// the control store, and the lines for a person. Returns the exit code.
int end_run(const orchestrator::job_outcome& result, std::vector<std::string> crashes, int64_t started_ms,
            const orchestrator::run_journal& journal, const run_paths& paths, control_role* control);

}  // namespace msomni::apps
