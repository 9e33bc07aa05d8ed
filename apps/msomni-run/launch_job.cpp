// launch_job (see launch_job.hpp): the control process. It owns the run directory, the UCX
// node "control", the orchestrator actor (published as "orchestrator", also the control
// endpoint the msomni CLI talks to) and, in the single-node default, an in-process node
// agent that starts the rank processes. With [[cluster.nodes]] configured it waits for
// msomni-agent processes to join instead.
#include "launch_job.hpp"

#include "checkpoint_store.hpp"
#include "durable_io.hpp"
#include "dataset_cache.hpp"

#include "config/config_loader.hpp"
#include "core/json_text.hpp"
#include "core/log.hpp"
#include "core/control_file.hpp"
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
#include <fcntl.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
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

namespace {

void write_control_file(const fs::path& run_dir, const std::string& address, const std::string& token,
                        const std::string& metrics_address, const config::job_config& cfg) {
  nlohmann::ordered_json control;
  control["address"] = address;
  control["token"] = token;
  control["pid"] = ::getpid();
  if (!metrics_address.empty()) control["metrics_address"] = metrics_address;
  if (!cfg.control.store.empty()) {
    control["store"] = cfg.control.store;
    control["job"] = cfg.job.name;
    control["follow_limit_s"] = leaderless_limit_s(cfg.control.lease_ttl_s);  // read by the node agents
  }
  write_private_file((run_dir / "control.json").string(), json_text(control) + "\n");
}

// The job's token as the previous leader's control.json gives it ("" when it cannot be read,
// or others than its owner could read it). A leader that takes over keeps it: the ranks that
// trained on prove it when they rejoin.
std::string previous_token(const fs::path& run_dir) {
  try {
    return read_secret_file((run_dir / "control.json").string());
  } catch (const std::exception&) {
    return {};
  }
}

// How long a takeover waits for the previous leader's ranks to rejoin before it starts anew:
// they see a dead leader's connection drop at once, a frozen one's after the heartbeat misses,
// and read the new address from control.json within a fraction of a second.
nanos adopt_window_for(std::chrono::milliseconds heartbeat, int64_t misses) {
  return std::chrono::duration_cast<nanos>(heartbeat * std::max<int64_t>(1, misses) + std::chrono::seconds(5));
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `text` replaces `path` whole or not at all (the checkpoint store's small-file write: an
// exclusively created temporary of this process, fsynced, renamed, the directory fsynced; the
// temporary is removed if any step fails). An empty result is success, else what failed.
std::string replace_file(const fs::path& path, const std::string& text) {
  try {
    ckpt::write_file_atomically(path, text, "." + path.filename().string() + ".tmp-" + std::to_string(::getpid()),
                                nullptr);
  } catch (const std::exception& e) {
    return "cannot write " + path.string() + ": " + e.what();
  }
  return {};
}

// summary.json and summary.txt; false (and said on stderr) when either cannot be written.
bool write_summary(const fs::path& run_dir, const orchestrator::run_facts& facts, const orchestrator::run_end& end) {
  bool ok = true;
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"summary.json", json_text(orchestrator::summary_json(facts, end)) + "\n"},
        std::pair<std::string, std::string>{"summary.txt", orchestrator::summary_text(facts, end)}}) {
    if (const auto err = replace_file(run_dir / name, text); !err.empty()) {
      std::cerr << "msomni-run: the run's summary was not saved: " << err << "\n";
      ok = false;
    }
  }
  return ok;
}

orchestrator::elastic_settings elastic_settings_from(const config::job_config& cfg, bool resume) {
  orchestrator::elastic_settings s;
  s.total_steps = static_cast<uint64_t>(cfg.training.steps);
  s.global_batch = cfg.training.global_batch;
  s.micro_batch = cfg.training.micro_batch;
  s.replicas = cfg.elasticity.replicas;
  s.min_replicas = cfg.elasticity.min_replicas;
  s.max_replicas = cfg.elasticity.max_replicas;
  s.grace_period = std::chrono::duration_cast<nanos>(std::chrono::duration<double>(cfg.elasticity.grace_period_s));
  s.resume = resume;
  s.expected_agents = static_cast<int64_t>(cfg.cluster.nodes.size());
  return s;
}

// The replicas a takeover starts with: those of the last resize an earlier leader completed
// (the store's 0: none, the config's), within the config's bounds (a config changed between
// leaders is refused by its fingerprint, so they hold unless the store's value is damaged).
int64_t takeover_replicas(int64_t stored, const config::job_config& cfg) {
  if (stored <= 0) return cfg.elasticity.replicas;
  return std::clamp(stored, cfg.elasticity.min_replicas, cfg.elasticity.max_replicas);
}

// The election that made this process the job's leader, and from now on every journal event
// in the store's event log as well.
void journal_leadership(orchestrator::run_journal& journal, control_role& control, const config::job_config& cfg) {
  const auto& e = control.elected;
  orchestrator::event_context ctx;
  ctx.fields = {{"term", e.term},
                {"store", cfg.control.store},
                {"lease_ttl_s", cfg.control.lease_ttl_s},
                {"leader", control.leadership->id()}};
  const bool takeover = e.what == control::takeover::take_over;
  const int64_t replicas = takeover_replicas(e.previous.replicas, cfg);
  if (takeover) {
    ctx.fields["previous_leader"] = e.previous.leader;
    ctx.fields["previous_term"] = e.previous.term;
    ctx.fields["previous_step"] = e.previous.step;
    ctx.fields["previous_recoveries"] = e.previous.recoveries;
    ctx.fields["previous_epoch"] = e.previous.epoch;
    ctx.fields["replicas"] = replicas;
    ctx.fields["waited_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(e.waited).count();
    ctx.step = e.previous.step;
  }
  journal.observe_events([leadership = control.leadership.get()](const nlohmann::ordered_json& line) {
    leadership->record_event(line);
  });
  journal.event(takeover ? "control_takeover" : "control_elected",
                takeover ? "took over the job from " + e.previous.leader + " (term " + std::to_string(e.previous.term) +
                               ", last step " + std::to_string(e.previous.step) + ", " +
                               std::to_string(e.previous.recoveries) + " recoveries spent, epoch " +
                               std::to_string(e.previous.epoch) + ") as term " + std::to_string(e.term) +
                               "; its ranks are adopted if they trained on and all rejoin, else ranks resume from the newest "
                               "checkpoint on " + std::to_string(replicas) + " replicas"
                         : "leads the job in the control store " + cfg.control.store + " (term " + std::to_string(e.term) + ")",
                ctx);
}

}  // namespace

// A failed pre-flight exits alike whether this node's check failed or an agent's.
static_assert(health::preflight_failed_exit == orchestrator::exit_preflight_failed);

int launch_job(const config::job_config& cfg, const run_paths& paths, const run_options& opts,
               const std::optional<resume_check>& resume_from, const nlohmann::ordered_json& preflight,
               control_role* control, const slurm_plan* slurm) {
  const fs::path& run_dir = paths.run_dir;
  const fs::path& ckpt_dir = paths.checkpoint_dir;
  const auto started_ms = unix_ms();
  // Held until this function returns: no second msomni-run writes here meanwhile.
  const auto claim = claim_run_paths(paths, cfg);
  if (opts.fresh) {
    const auto removed = remove_job_outputs(paths);
    for (const auto& k : removed.kept)
      std::cerr << "msomni-run: --fresh left " << k << " alone (msomni does not write such names)\n";
  }
  orchestrator::run_journal journal(run_dir);
  for (const auto& n : claim.notes) journal.event("run_dir_lock", n);
  if (control) journal_leadership(journal, *control, cfg);
  if (slurm)
    for (const auto& n : slurm->notes) journal.event("slurm_allocation", n);
  // The pre-flight ran before the run directory was ours: its report is kept here now.
  if (preflight.is_object()) {
    if (const auto err = replace_file(run_dir / "preflight.json", json_text(preflight) + "\n"); !err.empty())
      std::cerr << "msomni-run: the pre-flight report was not saved: " << err << "\n";
    orchestrator::event_context ctx;
    ctx.fields["verdict"] = preflight.value("verdict", "");
    ctx.fields["level"] = preflight.value("level", "");
    auto& warned = ctx.fields["warned"] = nlohmann::ordered_json::array();
    size_t passed = 0, skipped = 0;
    for (const auto& c : preflight.value("checks", nlohmann::ordered_json::array())) {
      const auto status = c.value("status", "");
      if (status == "warn") warned.push_back(c.value("id", ""));
      passed += status == "pass";
      skipped += status == "skipped";
    }
    journal.event("preflight", "pre-flight " + ctx.fields["verdict"].get<std::string>() + ": " + std::to_string(passed) +
                                   " passed, " + std::to_string(warned.size()) + " warned, " + std::to_string(skipped) +
                                   " skipped (preflight.json)",
                  ctx);
  }
  ensure_generated_datasets(cfg, std::cerr);
  const bool resume = !opts.fresh && fs::exists(ckpt_dir / "latest");
  // Which checkpoint the ranks resume from is theirs to find (the newest that verifies); their
  // rank_ready events name it.
  const auto attempt = "attempt " + std::to_string(journal.attempt());
  journal.event("attempt_started",
                resume ? attempt + " starts: msomni-run started on an existing checkpoint; the ranks resume from the newest "
                                   "one that verifies (latest names step " +
                             std::to_string(ckpt::latest_step(ckpt_dir).value_or(0)) + "), as their rank_ready events say"
                       : attempt + " resumes from step 0: msomni-run started" + (opts.fresh ? " with --fresh" : ""));
  if (resume) {
    // The config changes check_resume accepted (keys that may change on a resume), by key.
    orchestrator::event_context ctx;
    std::string changes;
    if (resume_from) {
      ctx.step = resume_from->step;
      ctx.fields["config_changes"] = nlohmann::ordered_json::array();
      for (const auto& c : resume_from->comparison.accepted)
        ctx.fields["config_changes"].push_back({{"key", c.key}, {"saved", c.saved}, {"now", c.now}});
      ctx.fields["config_compared"] = resume_from->comparison.saved_config_known;
      changes = !resume_from->comparison.saved_config_known ? "; the checkpoint records no config, so none was compared"
                : resume_from->comparison.accepted.empty()   ? "; the config is the checkpoint's"
                                                             : "; config changes accepted: " + accepted_summary(*resume_from);
    }
    journal.event("resume",
                  "ranks load the newest checkpoint under " + ckpt_dir.string() + " that verifies (latest points at " +
                      ckpt::latest_pointer_of(ckpt_dir).value_or("") + ")" + changes,
                  ctx);
    if (resume_from && !resume_from->comparison.accepted.empty())
      std::cerr << "msomni-run: resuming with changed keys: " << accepted_summary(*resume_from) << "\n";
  }

  // cluster.metrics_port: the job's /metrics, served here for every process of the job (ranks
  // and agents push theirs to the orchestrator).
  std::shared_ptr<metrics::job_metrics_collector> job_metrics;
  std::unique_ptr<metrics::metrics_endpoint> metrics_http;
  if (cfg.cluster.metrics_port != 0) {
    const auto sources = static_cast<size_t>(2 * cfg.elasticity.max_replicas) + cfg.cluster.nodes.size() + 8;
    job_metrics = std::make_shared<metrics::job_metrics_collector>(
        cfg.job.name, std::make_shared<metrics::metrics_registry>(), sources);
    const auto port = cfg.cluster.metrics_port == config::metrics_port_auto ? 0 : cfg.cluster.metrics_port;
    metrics_http = std::make_unique<metrics::metrics_endpoint>(cfg.cluster.control_host, static_cast<uint16_t>(port),
                                                               [job_metrics] { return job_metrics->collect(); });
    journal.event("metrics", "Prometheus metrics at http://" + metrics_http->address() + "/metrics");
  }

  // The agents' srun step outlives the control node below: its agents leave when it goes.
  std::unique_ptr<slurm_agent_step> agent_step;
  caf::actor_system_config caf_cfg;
  caf::actor_system sys{configure_process(caf_cfg, 2, idle_threads::wake)};
  // The job's token: the msomni CLI sends it with its requests, and every peer of the
  // control node (agents, ranks, the CLI) proves it in its UCX hello.
  const bool takeover = control && control->elected.what == control::takeover::take_over;
  std::string token = takeover ? previous_token(run_dir) : std::string();
  if (takeover && token.empty())
    journal.event("control_token", "the previous leader's control.json gives no token: its ranks cannot rejoin; a new "
                                   "token is made and the job starts anew from its newest checkpoint");
  if (token.empty()) token = random_token();
  transport::ucx_node_options node_opt;
  node_opt.name = "control";
  node_opt.secret = token;
  node_opt.listen_host = cfg.cluster.control_host;
  node_opt.listen_port = static_cast<uint16_t>(cfg.cluster.control_port);
  node_opt.busy_poll = transport::control_plane_busy_poll;
  // elasticity.heartbeat_*: keep-alives on every UCX endpoint; silence this long means down.
  const auto heartbeat = std::chrono::milliseconds(static_cast<int64_t>(cfg.elasticity.heartbeat_interval_s * 1000));
  node_opt.keepalive_interval = heartbeat;
  node_opt.keepalive_misses = static_cast<int>(cfg.elasticity.heartbeat_misses);
  transport::transport_hub hub(node_opt);
  hub.add_refusal_listener([&journal](const std::string& address, const std::string& reason) {
    journal.event("peer_refused", "a connection from " + address + ": " + reason);
  });
  transport::gateway gw(sys, hub);
  metrics::metrics_registry::refresher_handle transport_series;
  if (job_metrics) transport_series = transport::watch_transport(*job_metrics->own(), hub, gw);
  if (job_metrics && control) control->leadership->attach_metrics(*job_metrics->own());
  else if (job_metrics) control::embedded_control_series(*job_metrics->own());

  const auto config_path = fs::absolute(cfg.source_path).string();
  std::promise<orchestrator::job_outcome> outcome;
  auto finished = outcome.get_future();
  orchestrator::orchestrator_env env;
  env.worker_of = [&gw](const std::string& rank) { return gw.remote_actor(rank, "worker"); };
  env.rank_args = [&](const std::string& rank) {
    std::vector<std::string> args{config_path, "--name", rank, "--control", hub.node().address(), "--ckpt-dir", ckpt_dir.string()};
    // The rank trains on when this process stops answering and rejoins whoever control.json
    // names: this process when it answers again, or with a [control] store the next leader.
    args.insert(args.end(), {"--follow-control", (run_dir / "control.json").string()});
    for (const auto& s : opts.overrides) args.insert(args.end(), {"--set", s});
    return args;
  };
  env.latest_checkpoint_step = [ckpt_dir] { return ckpt::latest_step(ckpt_dir).value_or(0); };
  if (resume) {
    // The memory fit decisions of the earlier attempts: the steps they changed run the same way
    // again after the checkpoint.
    std::ifstream events(run_dir / "events.jsonl");
    uint64_t skipped = 0;
    env.fit_replay = std::make_shared<orchestrator::memory_fit_replay>(
        orchestrator::memory_fit_replay::from_events(events, 100'000, skipped));
    if (env.fit_replay->size() > 0 || skipped > 0)
      journal.event("memory_fit_replay", std::to_string(env.fit_replay->size()) +
                                             " memory fit decisions of earlier attempts are replayed" +
                                             (skipped ? "; " + std::to_string(skipped) + " unreadable lines skipped" : ""));
  }
  env.on_finish = [&outcome](const orchestrator::job_outcome& o) { outcome.set_value(o); };
  // Shared, not on this stack: the orchestrator may report a crash while the system winds down.
  struct crash_list {
    std::mutex mutex;
    std::vector<std::string> what;
  };
  const auto rank_crashes = std::make_shared<crash_list>();
  env.on_rank_crash = [rank_crashes](const std::string& what) {
    std::lock_guard lock(rank_crashes->mutex);
    rank_crashes->what.push_back(what);
  };
  env.journal = &journal;
  env.token = token;
  env.stop_signal = &stop_signal::flag();
  env.stop_signal_number = &stop_signal::number();
  if (control) {
    env.deposed = &control->deposed;
    env.deposed_why = &control->deposed_why;
  }
  env.ranks_follow_leader = control != nullptr;
  env.agent_silence_limit = heartbeat * std::max<int64_t>(1, cfg.elasticity.heartbeat_misses);
  // A rank sees a frozen control process's silence after the same misses and asks again within
  // a few seconds of it answering: the takeover's adoption window fits a reconnect too.
  env.reconnect_window = adopt_window_for(heartbeat, cfg.elasticity.heartbeat_misses);
  env.progress_on_tty = ::isatty(2);
  if (cfg.cluster.nodes.empty()) env.in_process_agent = "local";  // started below
  if (slurm && cfg.cluster.release_idle_nodes)
    env.release_node = [&agent_step](const std::string& node) -> std::string {
      return agent_step ? agent_step->release({node}) : "the agents' step is not running";
    };
  env.health.max_nonfinite_steps = static_cast<uint64_t>(cfg.training.max_nonfinite_steps);
  env.health.loss_spike_factor = cfg.training.loss_spike_factor;
  env.max_data_wait_ms = cfg.io.max_data_wait_ms;
  env.metrics = job_metrics;
  env.job_name = cfg.job.name;
  env.memory = {cfg.memory.predictor_enabled, cfg.memory.safety_margin_gb, cfg.memory.device_memory_gb,
                cfg.memory.horizon_steps};
  const auto secs = [](double s) { return std::chrono::duration_cast<nanos>(std::chrono::duration<double>(s)); };
  env.autoscale = {cfg.elasticity.autoscale,
                   cfg.elasticity.scale_up_utilization,
                   secs(cfg.elasticity.scale_up_sustain_s),
                   cfg.elasticity.scale_down_utilization,
                   secs(cfg.elasticity.scale_down_sustain_s),
                   secs(cfg.elasticity.autoscale_cooldown_s),
                   secs(cfg.elasticity.grace_period_s)};
  // memory.predictor_enabled: the job's memory watermark predictor, fed by the orchestrator.
  caf::actor memory_predictor;
  if (cfg.memory.predictor_enabled) {
    predict::watermark_settings w;
    w.forecast.sequence_length = static_cast<size_t>(cfg.memory.sequence_length);
    w.forecast.horizon_steps = static_cast<size_t>(cfg.memory.horizon_steps);
    w.forecast.pca_dims = static_cast<size_t>(cfg.memory.pca_dims);
    w.forecast.seed = static_cast<uint64_t>(cfg.training.seed);
    w.margin_bytes = cfg.memory.safety_margin_gb * 1e9;
    w.device_bytes = cfg.memory.device_memory_gb * 1e9;
    memory_predictor = predict::spawn_memory_watermark(sys, w, job_metrics ? job_metrics->own() : nullptr);
    env.memory_predictor = memory_predictor;
  }
  // With [[cluster.nodes]] and the pre-flight on, every agent's node is checked before it gets
  // a rank; the combined report replaces preflight.json.
  std::optional<orchestrator::node_preflight> node_checks;
  if (!cfg.cluster.nodes.empty() && cfg.health.preflight != "off") {
    orchestrator::node_preflight np;
    for (const auto& n : cfg.cluster.nodes) np.settings.nodes.push_back(n.name);
    np.control_report = preflight;
    np.request.config_text = ckpt::read_text_file(opts.config_path);  // throws, naming the file
    np.request.level = cfg.health.preflight;
    np.request.config_name = fs::absolute(opts.config_path).string();
    np.request.overrides = opts.overrides;
    np.request.checkpoint_dir = ckpt_dir.string();
    np.on_report = [run_dir](const nlohmann::ordered_json& report) {
      if (const auto err = replace_file(run_dir / "preflight.json", json_text(report) + "\n"); !err.empty())
        std::cerr << "msomni-run: the pre-flight report was not saved: " << err << "\n";
    };
    node_checks = std::move(np);
  }
  auto elastic = elastic_settings_from(cfg, resume);
  // The last step metrics.jsonl holds, read once: a resume names the steps past it that its
  // checkpoint holds and no record does; adopted ranks send again the records after it.
  uint64_t metrics_last = 0;
  if (fs::exists(run_dir / "metrics.jsonl")) {
    std::ifstream metrics(run_dir / "metrics.jsonl");
    metrics_last = orchestrator::last_step_in(metrics);
    if (resume) env.metrics_last_step = metrics_last;
  }
  // A takeover goes on with the job as its predecessors left it: the recoveries they spent
  // (the budget is the job's), the epochs they used (one epoch history) and the replicas of
  // their last completed resize (a resize they did not complete is dropped).
  if (control && control->elected.what == control::takeover::take_over) {
    const auto& before = control->elected.previous;
    elastic.recoveries_spent = static_cast<int64_t>(before.recoveries);
    // The store's epoch, or a later one the dead leader journaled and never committed; new
    // ranks named after every rank an earlier leader started.
    std::ifstream events(run_dir / "events.jsonl");
    const auto history = orchestrator::history_in(events);
    elastic.epochs_before = std::max(before.epoch, history.highest_epoch);
    elastic.rank_ids_before = history.next_rank_id;
    elastic.replicas = takeover_replicas(before.replicas, cfg);
    // The ranks the dead leader left training are adopted as they run, when they all rejoin.
    if (env.ranks_follow_leader) {
      elastic.adopt_window = adopt_window_for(heartbeat, cfg.elasticity.heartbeat_misses);
      env.recorded_step = metrics_last;
    }
  }
  auto orchestrator = orchestrator::spawn_orchestrator(sys, elastic, std::move(env), std::move(node_checks));
  gw.publish("orchestrator", orchestrator);
  // Only now is the address worth reading: whoever finds it (an agent, a rank that follows the
  // leader, the CLI) reaches a published orchestrator, not a node that drops its messages.
  write_control_file(run_dir, hub.node().address(), token, metrics_http ? metrics_http->address() : "", cfg);
  if (control) control->leadership->announce(hub.node().address(), metrics_http ? metrics_http->address() : "");
  journal.event("control_started", "control at " + hub.node().address() + ", run directory " + run_dir.string());

  caf::actor local_agent;
  // Set when this process was deposed: its agent leaves the ranks training for the next leader.
  auto let_ranks_run = std::make_shared<std::atomic<bool>>(false);
  auto local_ranks = std::make_shared<std::atomic<size_t>>(0);  // rank processes of this node, until reaped
  if (cfg.cluster.nodes.empty()) {
    agent::agent_settings a;
    a.live_ranks = local_ranks;
    a.node = "local";
    a.slots = cfg.elasticity.max_replicas;
    a.rank_binary = agent::find_rank_binary();
    a.log_dir = (run_dir / "logs").string();
    a.job_token = token;
    a.heartbeat_interval = heartbeat;
    a.metrics = job_metrics ? job_metrics->own() : nullptr;  // in this process: its series are the control's
    if (control) {  // the ranks outlive this process, their logs copied by a process of their own
      a.outliving_logger = a.rank_binary;
      a.let_ranks_run = let_ranks_run;
    }
    local_agent = agent::spawn_node_agent(sys, a, orchestrator);
  } else if (slurm) {
    try {
      agent_step = std::make_unique<slurm_agent_step>(*slurm, hub.node().address(), run_dir,
                                                      cfg.elasticity.heartbeat_interval_s);
    } catch (const std::exception& e) {
      const auto why = std::string("the node agents cannot be started with srun: ") + e.what();
      journal.event("slurm_agents_failed", why);
      caf::anon_send_exit(orchestrator, caf::exit_reason::user_shutdown);
      if (memory_predictor) caf::anon_send_exit(memory_predictor, caf::exit_reason::user_shutdown);
      throw std::runtime_error(why);
    }
    {
      journal.event("slurm_agents", "one msomni-agent per node of Slurm job " + slurm->alloc.job_id + ": " +
                                        agent_step->command_line() + " (output in logs/slurm-agents.log)");
      std::cerr << "msomni-run: node agents started with srun on " << slurm->alloc.node_list << "\n";
    }
  } else {
    std::cerr << "msomni-run: waiting for node agents at " << hub.node().address() << ":\n";
    for (const auto& n : cfg.cluster.nodes)
      std::cerr << "  msomni-agent --join " << hub.node().address() << " --token-file " << (run_dir / "control.json").string()
                << " --node " << n.name << " --rack " << n.rack
                << " --switch " << n.switch_name << " --slots " << n.slots << "\n";
  }
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
  // How the run ended: finished 0, failed 1, stopped 3 (SIGINT or `msomni stop`), preempted 4
  // (SIGTERM: a manager took the resources back), pre-flight failed on an agent's node 5
  // (nothing trained). Both stops are resumable alike.
  orchestrator::run_end end;
  {
    std::lock_guard lock(rank_crashes->mutex);
    end.rank_crashes = rank_crashes->what;
  }
  // A rank that died by a signal after its result (its work was done and committed) fails a
  // run that would have finished: whatever broke it may have broken something before.
  const bool crashed_after_result = !end.rank_crashes.empty();
  end.state = !result.ok || journal.failed() ? "failed"
              : result.deposed               ? "deposed"
              : result.preempted             ? "preempted"
              : result.stopped               ? "stopped"
              : crashed_after_result         ? "failed"
                                             : "finished";
  end.exit_code = result.preflight_failed     ? orchestrator::exit_preflight_failed
                  : end.state == "failed"    ? orchestrator::exit_failed
                  : end.state == "deposed"   ? orchestrator::exit_deposed
                  : end.state == "preempted" ? orchestrator::exit_preempted
                  : end.state == "stopped"   ? orchestrator::exit_stopped
                                             : orchestrator::exit_finished;
  end.reason = journal.failed() && result.ok ? journal.failure() : result.reason;
  if (end.state == "failed" && result.ok && !journal.failed())  // failed only by the crash
    end.reason = "every step was trained, but " + end.rank_crashes.front() +
                 (end.rank_crashes.size() > 1 ? " (and " + std::to_string(end.rank_crashes.size() - 1) + " more)" : "");
  for (const auto& c : end.rank_crashes) std::cerr << "msomni-run: " << c << "\n";
  end.started_ms = started_ms;
  end.ended_ms = unix_ms();
  end.attempt = journal.attempt();
  end.resume_step = ckpt::latest_step(ckpt_dir);
  end.resume_checkpoint = ckpt::latest_pointer_of(ckpt_dir).value_or("");
  end.run_dir = run_dir.string();
  end.checkpoint_dir = ckpt_dir.string();
  const bool saved = write_summary(run_dir, result.facts, end);
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
  std::cout << "  run directory " << run_dir.string() << " (" << (saved ? "summary.txt, " : "")
            << "metrics.jsonl, events.jsonl, logs/, checkpoints/)\n";
  if (journal.failed()) std::cerr << "msomni-run: " << journal.failure() << "\n";
  return end.exit_code;
}

}  // namespace msomni::apps
