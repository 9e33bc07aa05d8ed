// launch_job (see launch_job.hpp): the control process. It owns the run directory, the UCX
// node "control", the orchestrator actor (published as "orchestrator", also the control
// endpoint the msomni CLI talks to) and, in the single-node default, an in-process node
// agent that starts the rank processes. With [[cluster.nodes]] configured it waits for
// msomni-agent processes to join instead. What it sets up is decided by launch_plan.hpp from
// the config; the run directory's own files and opening events are launch_records.hpp's.
#include "launch_job.hpp"

#include "launch_plan.hpp"
#include "launch_records.hpp"
#include "launch_setup.hpp"

#include "checkpoint_store.hpp"
#include "core/json_text.hpp"
#include "dataset_cache.hpp"

#include "config/config_loader.hpp"
#include "core/clock.hpp"
#include "core/secret_file.hpp"
#include "core/stop_signal.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "hub/transport_metrics.hpp"
#include "messages/catalog.hpp"
#include "metrics/job_metrics_collector.hpp"
#include "metrics/metrics_endpoint.hpp"
#include "memory_watermark_actor.hpp"
#include "health_preflight.hpp"
#include "node_agent.hpp"
#include "orchestrator_actor.hpp"
#include "run_journal.hpp"
#include "run_summary.hpp"
#include "control_leadership.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>
#include <iostream>

namespace msomni::apps {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A failed pre-flight exits alike whether this node's check failed or an agent's.
static_assert(health::preflight_failed_exit == orchestrator::exit_preflight_failed);

namespace {

// Once the job ended: the local ranks' ends are awaited, the actors told to exit, and the run
// ended (end_run). Returns the exit code.
int wind_down(const agent::node_agent_actor& local_agent, const msg::orchestrator_actor& orchestrator,
              const msg::memory_predictor_actor& memory_predictor,
              std::future<orchestrator::job_outcome>& finished, control_role* control,
              const std::shared_ptr<std::atomic<bool>>& let_ranks_run,
              const std::shared_ptr<std::atomic<size_t>>& local_ranks, crash_list& rank_crashes, int64_t started_ms,
              orchestrator::run_journal& journal, const run_paths& paths) {
  stop_signal::install();
  const auto result = finished.get();
  stop_signal::restore();
  if (result.deposed && control) *let_ranks_run = true;
  // Ranks leave on their own after rank_left: their ends are awaited (a rank bounds its own
  // teardown at 20 s), so that one dying by a signal after its result is seen and told; a
  // moment more lets the orchestrator take the last end. Ranks left for the next leader go on.
  if (!*let_ranks_run) {
    const auto until = std::chrono::steady_clock::now() + 25s;
    while (*local_ranks > 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(300ms);
  if (local_agent) caf::anon_send_exit(local_agent, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(orchestrator, caf::exit_reason::user_shutdown);
  if (memory_predictor) caf::anon_send_exit(memory_predictor, caf::exit_reason::user_shutdown);
  if (::isatty(2)) std::cerr << "\n";
  std::vector<std::string> crashes;
  {
    std::lock_guard lock(rank_crashes.mutex);
    crashes = rank_crashes.what;
  }
  return end_run(result, std::move(crashes), started_ms, journal, paths, control);
}

// The control process proper: the actor system, the control node, the orchestrator and the
// node agents; returns the exit code once the job ended.
int control_job(const config::job_config& cfg, const run_paths& paths, const run_options& opts,
                const nlohmann::ordered_json& preflight, control_role* control, const slurm_plan* slurm,
                orchestrator::run_journal& journal, const served_metrics& served, bool resume, int64_t started_ms) {
  const fs::path& run_dir = paths.run_dir;
  const fs::path& ckpt_dir = paths.checkpoint_dir;
  // The agents' srun step outlives the control node below: its agents leave when it goes.
  std::unique_ptr<slurm_agent_step> agent_step;
  caf::actor_system_config caf_cfg;
  caf::actor_system sys{configure_process(caf_cfg, 2, idle_threads::wake)};
  const bool takeover = control && control->elected.what == control::takeover::take_over;
  const auto token = job_token(run_dir, takeover, journal);
  transport::transport_hub hub(control_node_options(cfg, token));
  hub.add_refusal_listener([&journal](const std::string& address, const std::string& reason) {
    journal.event("peer_refused", "a connection from " + address + ": " + reason);
  });
  transport::gateway gw(sys, hub);
  metrics::metrics_registry::refresher_handle transport_series;
  if (served.job) transport_series = transport::watch_transport(*served.job->own(), hub, gw);
  if (served.job && control) control->leadership->attach_metrics(*served.job->own());
  else if (served.job) control::embedded_control_series(*served.job->own());

  std::promise<orchestrator::job_outcome> outcome;
  auto finished = outcome.get_future();
  const auto rank_crashes = std::make_shared<crash_list>();
  orchestrator::orchestrator_env env;
  settle_env(env, cfg, control, served);
  env.worker_of = [&gw](const std::string& rank) { return gw.remote_actor<msg::worker_actor>(rank, "worker"); };
  env.rank_args = [launch = rank_launch{fs::absolute(cfg.source_path).string(), hub.node().address(), ckpt_dir.string(),
                                        (run_dir / "control.json").string(), opts.overrides}](
                      const std::string& rank) { return rank_arguments(launch, rank); };
  env.latest_checkpoint_step = [ckpt_dir] { return ckpt::latest_step(ckpt_dir).value_or(0); };
  if (resume) env.fit_replay = earlier_fits(run_dir, journal);
  env.on_finish = [&outcome](const orchestrator::job_outcome& o) { outcome.set_value(o); };
  env.on_rank_crash = [rank_crashes](const std::string& what) {
    std::lock_guard lock(rank_crashes->mutex);
    rank_crashes->what.push_back(what);
  };
  env.journal = &journal;
  env.token = token;
  if (slurm && cfg.cluster.release_idle_nodes)
    env.release_node = [&agent_step](const std::string& node) -> std::string {
      return agent_step ? agent_step->release({node}) : "the agents' step is not running";
    };
  const auto memory_predictor = start_memory_predictor(sys, cfg, served);
  env.memory_predictor = memory_predictor;
  auto elastic = elastic_settings_from(cfg, resume);
  // The last step metrics.jsonl holds, read once: a resume names the steps past it that its
  // checkpoint holds and no record does; adopted ranks send again the records after it.
  uint64_t metrics_last = 0;
  if (fs::exists(run_dir / "metrics.jsonl")) {
    std::ifstream metrics(run_dir / "metrics.jsonl");
    metrics_last = orchestrator::last_step_in(metrics);
    if (resume) env.metrics_last_step = metrics_last;
  }
  if (takeover) continue_takeover(elastic, env, *control, cfg, run_dir, metrics_last);
  auto orchestrator = orchestrator::spawn_orchestrator(sys, elastic, std::move(env),
                                                       agents_preflight(cfg, opts, paths, preflight));
  gw.publish("orchestrator", orchestrator);
  // Only now is the address worth reading: whoever finds it (an agent, a rank that follows the
  // leader, the CLI) reaches a published orchestrator, not a node that drops its messages.
  write_control_file(run_dir, control_file_json(hub.node().address(), token, ::getpid(), served.address(), cfg));
  if (control) control->leadership->announce(hub.node().address(), served.address());
  journal.event("control_started", "control at " + hub.node().address() + ", run directory " + run_dir.string());

  // Set when this process was deposed: its agent leaves the ranks training for the next leader.
  auto let_ranks_run = std::make_shared<std::atomic<bool>>(false);
  auto local_ranks = std::make_shared<std::atomic<size_t>>(0);  // rank processes of this node, until reaped
  agent::node_agent_actor local_agent;
  try {
    local_agent = start_agents(sys, cfg, run_dir, token, served, control, slurm, orchestrator, hub.node().address(),
                               journal, agent_step, let_ranks_run, local_ranks);
  } catch (const std::exception&) {
    caf::anon_send_exit(orchestrator, caf::exit_reason::user_shutdown);
    if (memory_predictor) caf::anon_send_exit(memory_predictor, caf::exit_reason::user_shutdown);
    throw;
  }
  return wind_down(local_agent, orchestrator, memory_predictor, finished, control, let_ranks_run, local_ranks,
                   *rank_crashes, started_ms, journal, paths);
}

}  // namespace

int launch_job(const config::job_config& cfg, const run_paths& paths, const run_options& opts,
               const std::optional<resume_check>& resume_from, const nlohmann::ordered_json& preflight,
               control_role* control, const slurm_plan* slurm) {
  const fs::path& run_dir = paths.run_dir;
  const fs::path& ckpt_dir = paths.checkpoint_dir;
  const auto started_ms = unix_ms();
  // Held until this function returns: no second msomni-run writes here meanwhile.
  const auto claim = claim_run_paths(paths, cfg);
  if (opts.fresh)
    for (const auto& k : remove_job_outputs(paths).kept)
      std::cerr << "msomni-run: --fresh left " << k << " alone (msomni does not write such names)\n";
  orchestrator::run_journal journal(run_dir);
  for (const auto& n : claim.notes) journal.event("run_dir_lock", n);
  if (control) journal_leadership(journal, *control, cfg);
  if (slurm)
    for (const auto& n : slurm->notes) journal.event("slurm_allocation", n);
  keep_preflight(journal, run_dir, preflight);
  ensure_generated_datasets(cfg, std::cerr);
  const bool resume = !opts.fresh && fs::exists(ckpt_dir / "latest");
  // Which checkpoint the ranks resume from is theirs to find (the newest that verifies); their
  // rank_ready events name it.
  journal_attempt(journal, ckpt_dir, resume, opts.fresh, resume_from);
  const auto served = serve_metrics(cfg, journal);
  return control_job(cfg, paths, opts, preflight, control, slurm, journal, served, resume, started_ms);
}


}  // namespace msomni::apps
