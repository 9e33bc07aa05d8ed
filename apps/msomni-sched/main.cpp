// msomni-sched [--config FILE] [options]: see --help.
// The co-location scheduler as a service: the scheduler actor shell around the same
// scheduler_core that msomni-sim replays, on a UCX node named "sched". Jobs reach it with
// `msomni job --scheduler-info FILE ...`. It publishes the actor under a name that carries a
// random token and writes "ADDRESS TOKEN" to the info file (mode 0600): without the token a
// job cannot address it. Every decision is printed with its reason. With --metrics-port it
// serves its own Prometheus metrics at http://HOST:PORT/metrics (the scheduler families, its
// actors' accounting and its UCX node's counters). With --store, instances of one service
// share its leadership over etcd: one serves, the others stand by and take over
// (sched_leadership.hpp). Ends on SIGINT/SIGTERM. Exit codes: 0 stopped, 1 could not start,
// 2 usage or a bad --config file, 6 deposed (another instance leads the service).
#include "config/config_loader.hpp"
#include "core/clock.hpp"
#include "core/command_line.hpp"
#include "core/secret_file.hpp"
#include "core/stop_signal.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "hub/transport_metrics.hpp"
#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_endpoint.hpp"
#include "sched_leadership.hpp"
#include "scheduler_actor.hpp"
#include "scheduler_metrics.hpp"
#include "core/store_url.hpp"

#include <arpa/inet.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <functional>
#include <sstream>
#include <vector>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;

namespace {

namespace limits = config::limits;

// How long a restarted service waits for the previous instance's jobs (its own flag).
constexpr limits::range<double> recover_s_limit{0.0, 86400.0};

// Flags that set a [scheduler] key: checked against that key's limit when parsed, applied
// after the --config file so that they override it.
class setting_flags {
 public:
  explicit setting_flags(CLI::App& app) : app_(app) {}

  template <class T, class Limit>
  void add(const std::string& flag, T& target, Limit limit, const std::string& what) {
    std::ostringstream shown;
    shown << target;
    app_.add_option_function<T>(
            flag, [this, &target](const T& v) { defer([&target, v] { target = v; }); }, what)
        ->transform(command_line::within(limit))
        ->default_str(shown.str());
  }

  void defer(std::function<void()> set) { apply_.push_back(std::move(set)); }

  void apply() const {
    for (const auto& a : apply_) a();
  }

 private:
  CLI::App& app_;
  std::vector<std::function<void()>> apply_;
};

void load_config_file(const std::string& path, sched::scheduler_settings& s) {
  const auto c = config::load_scheduler_file(path);
  sched::parse_policy(c.policy, s.params.policy);  // the schema admits only the three names
  s.params.idle_threshold = c.idle_threshold;
  s.params.min_confidence = c.min_confidence;
  s.params.drain_period_s = c.drain_period_s;
  s.params.best_effort_drain_s = c.best_effort_drain_s;
  s.params.min_run_window_s = c.min_run_window_s;
  s.params.reservation_window_s = c.reservation_window_s;
  s.params.queue_capacity = static_cast<size_t>(c.queue_capacity);
  s.params.critical_peak_memory_s = c.critical_peak_memory_s;
  s.params.critical_reserve_factor = c.critical_reserve_factor;
  s.params.critical_slowdown_budget = c.critical_slowdown_budget;
  s.predictor.window_steps = static_cast<size_t>(c.step_window);
  s.predictor.safety_factor = c.safety_factor;
}

// --metrics-port: "auto" (a free port) or a port number, 0 meaning no endpoint.
CLI::Validator metrics_port_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text == "auto") return {};
        if (auto why = command_line::within(limits::cluster::port)(text); !why.empty())
          return why + " (a port, 0 for none, or \"auto\")";
        return {};
      },
      "");
}

// --metrics-host: a dotted IPv4 address (the endpoint binds it; names and IPv6 are refused).
CLI::Validator ipv4_address() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        in_addr a{};
        if (::inet_pton(AF_INET, text.c_str(), &a) != 1)
          return "\"" + text + "\" is not an IPv4 address (a.b.c.d); host names and IPv6 are not served";
        return {};
      },
      "");
}

// Prints every decision with its reason (the scheduler's observer), and with a store records
// it in the service's event log there.
sched::decision_observer::behavior_type decision_printer(metrics::accounted<sched::decision_observer::base>* self, std::shared_ptr<metrics::metrics_registry> registry,
                               control::control_leadership* store) {
  self->account_as("decision_printer", std::move(registry));
  return {[store](const msg::job_command& c) {
    const std::string kind = sched::to_string(c.kind);
    std::cout << "decision t=" << c.at_s << "s " << kind << " " << (c.job.empty() ? "cluster" : c.job);
    if (!c.gpus.empty()) std::cout << " gpus=" << c.gpus.size();
    if (c.drain_s > 0) std::cout << " drain=" << c.drain_s << "s";
    std::cout << ": " << c.reason << std::endl;
    if (store) {
      nlohmann::ordered_json figures = nlohmann::ordered_json::object();
      for (const auto& [name, value] : c.figures) figures[name] = value;
      store->record_event({{"event", "decision"}, {"kind", "decision"}, {"decision", kind}, {"job", c.job},
                           {"gpus", c.gpus.size()}, {"at_s", c.at_s}, {"reason", c.reason}, {"figures", figures}});
    }
  }};
}

// --store: etcd://HOST:PORT[,HOST:PORT...].
CLI::Validator store_url() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string why;
        if (parse_store_url(text, why).empty()) return why;
        return {};
      },
      "");
}
}  // namespace

int main(int argc, char** argv) {
  sched::scheduler_settings s;
  s.params.best_effort_drain_s = config::scheduler_section{}.best_effort_drain_s;  // the service's default
  uint32_t gpus = 8, per_node = 8, per_switch = 4;
  std::string config_file, listen, info_file = "msomni-sched.info";
  std::string metrics_port = "0", metrics_host = "127.0.0.1";
  double recover_s = 10;
  apps::sched_store_options store;
  store.name = "default";

  CLI::App app{"The co-location scheduler as a service: places jobs that `msomni job --scheduler-info FILE` "
               "submits and prints every decision with its reason. Ends on SIGINT/SIGTERM.",
               "msomni-sched"};
  command_line::set_conventions(app);
  app.footer("Exit codes: 0 stopped, 1 could not start, 2 usage, a bad --config file or settings other than the "
             "service's in the store, 6 deposed (another instance leads the service).");
  using command_line::add_number;
  using command_line::within;
  app.add_option("--config", config_file,
                 "a TOML file with a [scheduler] table (configs/scheduler/); its keys are step_window, "
                 "idle_threshold, safety_factor, drain_period_s, best_effort_drain_s, min_run_window_s, "
                 "reservation_window_s, "
                 "queue_capacity, policy, min_confidence, critical_peak_memory_s, critical_reserve_factor, "
                 "critical_slowdown_budget; the flags below override it. A bad file is refused with FILE:LINE:COL")
      ->type_name("FILE");
  add_number(app, "--gpus", gpus, limits::cluster::gpus, "GPUs in the cluster");
  add_number(app, "--gpus-per-node", per_node, limits::cluster::gpus_per_node, "GPUs per node");
  add_number(app, "--nodes-per-switch", per_switch, limits::cluster::nodes_per_switch, "nodes under one switch");
  setting_flags settings(app);
  app.add_option_function<std::string>(
         "--policy",
         [&](const std::string& v) { settings.defer([&s, v] { sched::parse_policy(v, s.params.policy); }); },
         "omni (prediction-based co-location), exclusive (strict priority, no sharing) or greedy (fill idle "
         "GPUs without prediction)")
      ->check(CLI::IsMember({"omni", "exclusive", "greedy"}))
      ->default_str("omni");
  namespace sl = limits::scheduler;
  auto& p = s.params;
  settings.add("--idle-threshold", p.idle_threshold, sl::idle_threshold,
               "co-locate only where the predicted idle share passes it (scheduler.idle_threshold)");
  settings.add("--drain-s", p.drain_period_s, sl::drain_period_s,
               "seconds from a regular job's preemption notice to its forced release (scheduler.drain_period_s)");
  settings.add("--best-effort-drain-s", p.best_effort_drain_s, sl::best_effort_drain_s,
               "seconds from the preemption notice of work that gives way at once (best-effort jobs, borrowed runs) "
               "to its forced release: msomni job sends the command's process group SIGTERM at the notice and "
               "SIGKILL only then (scheduler.best_effort_drain_s)");
  settings.add("--min-run-window-s", p.min_run_window_s, sl::min_run_window_s,
               "seconds a regular job runs before it may be preempted (scheduler.min_run_window_s)");
  settings.add("--reservation-window-s", p.reservation_window_s, sl::reservation_window_s,
               "co-location is decided per window of this many seconds (scheduler.reservation_window_s)");
  settings.add("--queue-capacity", p.queue_capacity, sl::queue_capacity,
               "pending jobs; submissions past it are rejected (scheduler.queue_capacity)");
  settings.add("--critical-slowdown-budget", p.critical_slowdown_budget, sl::critical_slowdown_budget,
               "share of a critical job's run time its guests may cost it (measured from its step reports, steps "
               "with guests against steps alone); past it the job lends nothing until its run has grown back under "
               "it (scheduler.critical_slowdown_budget)");
  app.add_option("--listen", listen, "where the UCX node listens (default 127.0.0.1, any port)")
      ->type_name("HOST:PORT")
      ->transform(command_line::host_port());
  app.add_option("--info-file", info_file, "where \"ADDRESS TOKEN\" goes (mode 0600)")
      ->type_name("FILE")
      ->capture_default_str();
  app.add_option("--recover-s", recover_s,
                 "when the info file is already there (a previous instance wrote it: this is a restart), place "
                 "nothing for this many seconds so that the jobs still running on its GPUs can rejoin (msomni job "
                 "reconnects on its own); submissions meanwhile wait. 0: no wait")
      ->transform(within(recover_s_limit))
      ->capture_default_str();
  app.add_option("--metrics-port", metrics_port,
                 "serve Prometheus metrics at http://HOST:PORT/metrics on this port (\"auto\": a free one; "
                 "0: none); the address is printed at start and shown by `msomni sched-status`")
      ->type_name("PORT|auto")
      ->transform(metrics_port_value())
      ->capture_default_str();
  app.add_option("--metrics-host", metrics_host, "the IPv4 address the metrics endpoint binds")
      ->type_name("IPV4")
      ->transform(ipv4_address())
      ->capture_default_str();
  auto* store_flag = app.add_option("--store", store.store,
                                    "an etcd store for the service's leadership: instances with the same --store and "
                                    "--name share the service, one serves and the others stand by to take over "
                                    "(they need the same --info-file, on storage the jobs see)")
                         ->type_name("etcd://HOST:PORT[,HOST:PORT...]")
                         ->transform(store_url());
  app.add_option("--name", store.name, "the service's name in the store (its keys: /msomni/jobs/sched-NAME/)")
      ->needs(store_flag)
      ->capture_default_str();
  app.add_option("--lease-ttl-s", store.lease_ttl_s,
                 "seconds of the leader's lease: a standby takes over within it (and a third of it) of the "
                 "leader's death")
      ->transform(within(limits::control::lease_ttl_s))
      ->needs(store_flag)
      ->capture_default_str();
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;

  // The file first, so that flags override it.
  if (!config_file.empty()) {
    try {
      load_config_file(config_file, s);
    } catch (const config::config_errors& e) {
      std::cerr << "msomni-sched: the configuration is invalid; nothing was started.\n" << e.what();
      return 2;
    }
  }
  settings.apply();
  // An info file left by a previous instance means its jobs may still run and will rejoin.
  std::error_code exists_error;
  if (std::filesystem::exists(info_file, exists_error)) s.recover_s = recover_s;
  s.topo = sched::topology::uniform(gpus, per_node, per_switch);
  std::unique_ptr<apps::sched_leader> leader;
  if (!store.store.empty()) {
    store.info_file = info_file;
    std::ostringstream policy;
    policy << sched::to_string(s.params.policy) << " " << s.params.idle_threshold << " " << s.params.min_confidence
           << " " << s.params.drain_period_s << " " << s.params.best_effort_drain_s << " " << s.params.min_run_window_s
           << " " << s.params.reservation_window_s << " " << s.params.queue_capacity << " "
           << s.params.critical_peak_memory_s << " " << s.params.critical_reserve_factor << " "
           << s.params.critical_slowdown_budget << " " << s.predictor.window_steps << " " << s.predictor.safety_factor;
    store.settings = {{"gpus", std::to_string(gpus)},
                      {"gpus_per_node", std::to_string(per_node)},
                      {"nodes_per_switch", std::to_string(per_switch)},
                      {"policy", policy.str()}};
    auto elected = apps::lead_scheduler(store);
    if (auto* rc = std::get_if<int>(&elected)) return *rc;
    leader = std::move(std::get<std::unique_ptr<apps::sched_leader>>(elected));
    if (leader->took_over) s.recover_s = recover_s;  // the jobs of the leader before rejoin
  }

  caf::actor_system_config cfg;
  caf::actor_system sys{configure_process(cfg, 2, idle_threads::wake)};
  transport::ucx_node_options opt;
  opt.busy_poll = transport::control_plane_busy_poll;
  opt.name = "sched";
  if (!listen.empty()) {  // HOST:PORT, checked by the parser
    const auto colon = listen.rfind(':');
    opt.listen_host = listen.substr(0, colon);
    opt.listen_port = static_cast<uint16_t>(std::stoul(listen.substr(colon + 1)));
  }
  real_clock clock;
  try {
    // The endpoint first, so that the scheduler's status can name it.
    std::shared_ptr<sched::scheduler_metrics> metrics;
    std::unique_ptr<metrics::metrics_endpoint> metrics_http;
    if (metrics_port != "0") {
      metrics = std::make_shared<sched::scheduler_metrics>(std::make_shared<metrics::metrics_registry>());
      const auto port = metrics_port == "auto" ? uint16_t{0} : static_cast<uint16_t>(std::stoul(metrics_port));
      metrics_http =
          std::make_unique<metrics::metrics_endpoint>(metrics_host, port, [metrics] { return metrics->collect(); });
    }
    transport::transport_hub hub(opt);
    transport::gateway gw(sys, hub);
    metrics::metrics_registry::refresher_handle transport_series;  // destroyed before gw and hub
    if (metrics) transport_series = transport::watch_transport(*metrics->registry(), hub, gw);
    const std::string token = random_token();
    auto printer = sys.spawn(decision_printer, metrics ? metrics->registry() : nullptr,
                             leader ? leader->leadership.get() : nullptr);
    auto scheduler = sched::spawn_scheduler(sys, s, {&clock, printer, metrics, metrics_http ? metrics_http->address() : ""});
    gw.publish("scheduler-" + token, scheduler);
    write_private_file(info_file, hub.node().address() + " " + token + "\n");
    if (leader) leader->leadership->announce(hub.node().address(), metrics_http ? metrics_http->address() : "");
    stop_signal::install();
    std::cout << "msomni-sched: " << gpus << " GPUs (" << per_node << " per node), policy "
              << sched::to_string(s.params.policy) << " (idle threshold " << s.params.idle_threshold
              << ", slowdown budget " << s.params.critical_slowdown_budget * 100 << "%), listening at "
              << hub.node().address()
              << ", address and token in " << info_file << std::endl;
    if (metrics_http) std::cout << "msomni-sched: metrics http://" << metrics_http->address() << "/metrics" << std::endl;
    if (s.recover_s > 0)
      std::cout << "msomni-sched: restarted ("
                << (leader && leader->took_over ? "took over from " + leader->previous
                                                : info_file + " was there")
                << "): placing nothing for " << s.recover_s << " s while the previous instance's jobs rejoin"
                << std::endl;
    while (!stop_signal::flag()) std::this_thread::sleep_for(100ms);
    caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(printer, caf::exit_reason::user_shutdown);
    if (leader && leader->deposed) {
      std::cout << "msomni-sched: stopped (deposed)" << std::endl;
      return 6;
    }
    // The decisions still queued go to the store; the phase stays running, so a standby takes
    // the service over (the lease is revoked as the leadership goes).
    if (leader && !leader->leadership->finish("running"))
      std::cerr << "msomni-sched: the store did not take the last decisions before the stop" << std::endl;
    std::cout << "msomni-sched: stopped" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "msomni-sched: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
