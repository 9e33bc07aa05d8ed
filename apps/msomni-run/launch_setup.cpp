// launch_setup (see launch_setup.hpp).
#include "launch_setup.hpp"

#include "launch_plan.hpp"
#include "launch_records.hpp"

#include "checkpoint_store.hpp"
#include "durable_io.hpp"
#include "core/clock.hpp"
#include "core/json_text.hpp"
#include "core/secret_file.hpp"
#include "core/stop_signal.hpp"
#include "memory_watermark_actor.hpp"
#include "node_agent.hpp"
#include "control_leadership.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>

namespace msomni::apps {

namespace fs = std::filesystem;

served_metrics serve_metrics(const config::job_config& cfg, orchestrator::run_journal& journal) {
  served_metrics m;
  if (cfg.cluster.metrics_port == 0) return m;
  const auto sources = static_cast<size_t>(2 * cfg.elasticity.max_replicas) + cfg.cluster.nodes.size() + 8;
  m.job = std::make_shared<metrics::job_metrics_collector>(cfg.job.name, std::make_shared<metrics::metrics_registry>(),
                                                           sources);
  const auto port = cfg.cluster.metrics_port == config::metrics_port_auto ? 0 : cfg.cluster.metrics_port;
  m.http = std::make_unique<metrics::metrics_endpoint>(cfg.cluster.control_host, static_cast<uint16_t>(port),
                                                       [job = m.job] { return job->collect(); });
  journal.event("metrics", "Prometheus metrics at http://" + m.http->address() + "/metrics");
  return m;
}

// The job's token: the msomni CLI sends it with its requests, and every peer of the control
// node (agents, ranks, the CLI) proves it in its UCX hello. A takeover keeps its predecessor's.
std::string job_token(const fs::path& run_dir, bool takeover, orchestrator::run_journal& journal) {
  std::string token = takeover ? previous_token(run_dir) : std::string();
  if (takeover && token.empty())
    journal.event("control_token", "the previous leader's control.json gives no token: its ranks cannot rejoin; a new "
                                   "token is made and the job starts anew from its newest checkpoint");
  return token.empty() ? random_token() : token;
}

transport::ucx_node_options control_node_options(const config::job_config& cfg, const std::string& token) {
  transport::ucx_node_options o;
  o.name = "control";
  o.secret = token;
  o.listen_host = cfg.cluster.control_host;
  o.listen_port = static_cast<uint16_t>(cfg.cluster.control_port);
  o.busy_poll = transport::control_plane_busy_poll;
  // elasticity.heartbeat_*: keep-alives on every UCX endpoint; silence this long means down.
  o.keepalive_interval = heartbeat_of(cfg);
  o.keepalive_misses = static_cast<int>(cfg.elasticity.heartbeat_misses);
  return o;
}

// The memory fit decisions of the earlier attempts: the steps they changed run the same way
// again after the checkpoint.
std::shared_ptr<orchestrator::memory_fit_replay> earlier_fits(const fs::path& run_dir, orchestrator::run_journal& journal) {
  std::ifstream events(run_dir / "events.jsonl");
  uint64_t skipped = 0;
  auto replay = std::make_shared<orchestrator::memory_fit_replay>(
      orchestrator::memory_fit_replay::from_events(events, 100'000, skipped));
  if (replay->size() > 0 || skipped > 0)
    journal.event("memory_fit_replay", std::to_string(replay->size()) +
                                           " memory fit decisions of earlier attempts are replayed" +
                                           (skipped ? "; " + std::to_string(skipped) + " unreadable lines skipped" : ""));
  return replay;
}

// The settings of the orchestrator that do not depend on what runs (the callbacks are set by
// the caller).
void settle_env(orchestrator::orchestrator_env& env, const config::job_config& cfg, control_role* control,
                const served_metrics& served) {
  env.stop_signal = &stop_signal::flag();
  env.stop_signal_number = &stop_signal::number();
  if (control) {
    env.deposed = &control->deposed;
    env.deposed_why = &control->deposed_why;
  }
  env.ranks_follow_leader = control != nullptr;
  const auto heartbeat = heartbeat_of(cfg);
  env.agent_silence_limit = heartbeat * std::max<int64_t>(1, cfg.elasticity.heartbeat_misses);
  // A rank sees a frozen control process's silence after the same misses and asks again within
  // a few seconds of it answering: the takeover's adoption window fits a reconnect too.
  env.reconnect_window = adopt_window_for(heartbeat, cfg.elasticity.heartbeat_misses);
  env.progress_on_tty = ::isatty(2);
  if (cfg.cluster.nodes.empty()) env.in_process_agent = "local";  // started by start_agents
  env.health = health_settings_from(cfg);
  env.max_data_wait_ms = cfg.io.max_data_wait_ms;
  env.metrics = served.job;
  env.job_name = cfg.job.name;
  env.memory = {cfg.memory.predictor_enabled, cfg.memory.safety_margin_gb, cfg.memory.device_memory_gb,
                cfg.memory.horizon_steps};
  env.autoscale = autoscale_settings_from(cfg);
}

// memory.predictor_enabled: the job's memory watermark predictor, fed by the orchestrator.
msg::memory_predictor_actor start_memory_predictor(caf::actor_system& sys, const config::job_config& cfg, const served_metrics& served) {
  if (!cfg.memory.predictor_enabled) return {};
  predict::watermark_settings w;
  w.forecast.sequence_length = static_cast<size_t>(cfg.memory.sequence_length);
  w.forecast.horizon_steps = static_cast<size_t>(cfg.memory.horizon_steps);
  w.forecast.pca_dims = static_cast<size_t>(cfg.memory.pca_dims);
  w.forecast.seed = static_cast<uint64_t>(cfg.training.seed);
  w.margin_bytes = cfg.memory.safety_margin_gb * 1e9;
  w.device_bytes = cfg.memory.device_memory_gb * 1e9;
  return predict::spawn_memory_watermark(sys, w, served.job ? served.job->own() : nullptr);
}

// With [[cluster.nodes]] and the pre-flight on, every agent's node is checked before it gets a
// rank; the combined report replaces preflight.json.
std::optional<orchestrator::node_preflight> agents_preflight(const config::job_config& cfg, const run_options& opts,
                                                             const run_paths& paths,
                                                             const nlohmann::ordered_json& preflight) {
  if (cfg.cluster.nodes.empty() || cfg.health.preflight == "off") return std::nullopt;
  orchestrator::node_preflight np;
  for (const auto& n : cfg.cluster.nodes) np.settings.nodes.push_back(n.name);
  np.control_report = preflight;
  np.request.config_text = ckpt::read_text_file(opts.config_path);  // throws, naming the file
  np.request.level = cfg.health.preflight;
  np.request.config_name = fs::absolute(opts.config_path).string();
  np.request.overrides = opts.overrides;
  np.request.checkpoint_dir = paths.checkpoint_dir.string();
  np.on_report = [run_dir = paths.run_dir](const nlohmann::ordered_json& report) {
    if (const auto err = replace_file(run_dir / "preflight.json", json_text(report) + "\n"); !err.empty())
      std::cerr << "msomni-run: the pre-flight report was not saved: " << err << "\n";
  };
  return np;
}

// A takeover goes on with the job as its predecessors left it: the recoveries they spent (the
// budget is the job's), the epochs they used (one epoch history) and the replicas of their
// last completed resize (a resize they did not complete is dropped).
void continue_takeover(orchestrator::elastic_settings& elastic, orchestrator::orchestrator_env& env,
                       const control_role& control, const config::job_config& cfg, const fs::path& run_dir,
                       uint64_t metrics_last) {
  const auto& before = control.elected.previous;
  elastic.recoveries_spent = static_cast<int64_t>(before.recoveries);
  // The store's epoch, or a later one the dead leader journaled and never committed; new ranks
  // named after every rank an earlier leader started.
  std::ifstream events(run_dir / "events.jsonl");
  const auto history = orchestrator::history_in(events);
  elastic.epochs_before = std::max(before.epoch, history.highest_epoch);
  elastic.rank_ids_before = history.next_rank_id;
  elastic.replicas = takeover_replicas(before.replicas, cfg);
  // The ranks the dead leader left training are adopted as they run, when they all rejoin.
  if (env.ranks_follow_leader) {
    elastic.adopt_window = adopt_window_for(heartbeat_of(cfg), cfg.elasticity.heartbeat_misses);
    env.recorded_step = metrics_last;
  }
}

// The node agents: in this process for a single node, with srun on a Slurm allocation, or
// started by a person on each listed node (their commands printed). The in-process agent, if any.
agent::node_agent_actor start_agents(caf::actor_system& sys, const config::job_config& cfg, const fs::path& run_dir,
                        const std::string& token, const served_metrics& served, control_role* control,
                        const slurm_plan* slurm, const msg::orchestrator_actor& orchestrator, const std::string& address,
                        orchestrator::run_journal& journal, std::unique_ptr<slurm_agent_step>& agent_step,
                        const std::shared_ptr<std::atomic<bool>>& let_ranks_run,
                        const std::shared_ptr<std::atomic<size_t>>& local_ranks) {
  if (cfg.cluster.nodes.empty()) {
    agent::agent_settings a;
    a.live_ranks = local_ranks;
    a.node = "local";
    a.slots = cfg.elasticity.max_replicas;
    a.rank_binary = agent::find_rank_binary();
    a.log_dir = (run_dir / "logs").string();
    a.job_token = token;
    a.heartbeat_interval = heartbeat_of(cfg);
    a.metrics = served.job ? served.job->own() : nullptr;  // in this process: its series are the control's
    if (control) {  // the ranks outlive this process, their logs copied by a process of their own
      a.outliving_logger = a.rank_binary;
      a.let_ranks_run = let_ranks_run;
    }
    return agent::spawn_node_agent(sys, a, orchestrator);
  }
  if (slurm) {
    try {
      agent_step = std::make_unique<slurm_agent_step>(*slurm, address, run_dir, cfg.elasticity.heartbeat_interval_s);
    } catch (const std::exception& e) {
      const auto why = std::string("the node agents cannot be started with srun: ") + e.what();
      journal.event("slurm_agents_failed", why);
      throw std::runtime_error(why);
    }
    journal.event("slurm_agents", "one msomni-agent per node of Slurm job " + slurm->alloc.job_id + ": " +
                                      agent_step->command_line() + " (output in logs/slurm-agents.log)");
    std::cerr << "msomni-run: node agents started with srun on " << slurm->alloc.node_list << "\n";
    return {};
  }
  std::cerr << "msomni-run: waiting for node agents at " << address << ":\n";
  for (const auto& c : agent_commands(cfg, address, (run_dir / "control.json").string())) std::cerr << "  " << c << "\n";
  return {};
}

// How the run ended (launch_plan's decide_run_end): summary.json and summary.txt, the end in
// the control store, and the lines for a person. Returns the exit code.
int end_run(const orchestrator::job_outcome& result, std::vector<std::string> crashes, int64_t started_ms,
            const orchestrator::run_journal& journal, const run_paths& paths, control_role* control) {
  const fs::path& ckpt_dir = paths.checkpoint_dir;
  auto end = decide_run_end({result.ok, result.stopped, result.preempted, result.deposed, result.preflight_failed,
                             result.reason, journal.failed(), journal.failed() ? journal.failure() : "",
                             std::move(crashes)});
  for (const auto& c : end.rank_crashes) std::cerr << "msomni-run: " << c << "\n";
  end.started_ms = started_ms;
  end.ended_ms = unix_ms();
  end.attempt = journal.attempt();
  end.resume_step = ckpt::latest_step(ckpt_dir);
  end.resume_checkpoint = ckpt::latest_pointer_of(ckpt_dir).value_or("");
  end.run_dir = paths.run_dir.string();
  end.checkpoint_dir = ckpt_dir.string();
  const bool saved = write_summary(paths.run_dir, result.facts, end);
  if (control && !control->leadership->finish(end.state))
    std::cerr << "msomni-run: the job's end (" << end.state << ") was not committed to the control store"
              << (control->deposed ? " (this process no longer leads it)" : "") << "\n";
  std::cout << (end.state == "failed" ? "job failed: " : "job ") << result.text << "\n";
  if (end.state == "deposed")
    std::cout << "  deposed: " << (control->deposed_why.empty() ? std::string("the job's leadership was lost")
                                                                 : control->deposed_why)
              << "; the job's next leader (a standby, or msomni-run run again) resumes it from step "
              << (end.resume_step ? std::to_string(*end.resume_step) : std::string("0")) << "; exit code " << end.exit_code << "\n";
  else if (end.state == "stopped" || end.state == "preempted")
    std::cout << "  " << end.state << ": resume from " << (end.resume_step ? "step " + std::to_string(*end.resume_step) + " (" +
                                                                     (ckpt_dir / end.resume_checkpoint).string() + ")"
                                                               : std::string("step 0 (no checkpoint)"))
              << " by running the same command again; exit code " << end.exit_code << "\n";
  std::cout << "  run directory " << paths.run_dir.string() << " (" << (saved ? "summary.txt, " : "")
            << "metrics.jsonl, events.jsonl, logs/, checkpoints/)\n";
  if (journal.failed()) std::cerr << "msomni-run: " << journal.failure() << "\n";
  return end.exit_code;
}

}  // namespace msomni::apps
