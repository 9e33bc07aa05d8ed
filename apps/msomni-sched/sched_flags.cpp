// msomni-sched's flags (see sched_flags.hpp).
#include "sched_flags.hpp"

#include "config/config_loader.hpp"
#include "core/store_url.hpp"

#include <arpa/inet.h>

#include <sstream>

namespace msomni::apps {

namespace {

namespace limits = config::limits;

// How long a restarted service waits for the previous instance's jobs (its own flag).
constexpr limits::range<double> recover_s_limit{0.0, 86400.0};

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
void add_cluster_flags(CLI::App& app, sched_options& o) {
  using command_line::add_number;
  app.add_option("--config", o.config_file,
                 "a TOML file with a [scheduler] table (configs/scheduler/); its keys are step_window, "
                 "idle_threshold, safety_factor, drain_period_s, best_effort_drain_s, min_run_window_s, "
                 "reservation_window_s, "
                 "queue_capacity, policy, min_confidence, critical_peak_memory_s, critical_reserve_factor, "
                 "critical_slowdown_budget; the flags below override it. A bad file is refused with FILE:LINE:COL")
      ->type_name("FILE");
  add_number(app, "--gpus", o.gpus, limits::cluster::gpus, "GPUs in the cluster");
  add_number(app, "--gpus-per-node", o.per_node, limits::cluster::gpus_per_node, "GPUs per node");
  add_number(app, "--nodes-per-switch", o.per_switch, limits::cluster::nodes_per_switch, "nodes under one switch");
}

void add_policy_flags(CLI::App& app, sched_options& o, setting_flags& settings) {
  app.add_option_function<std::string>(
         "--policy",
         [&](const std::string& v) { settings.defer([&o, v] { sched::parse_policy(v, o.s.params.policy); }); },
         "omni (prediction-based co-location), exclusive (strict priority, no sharing) or greedy (fill idle "
         "GPUs without prediction)")
      ->check(CLI::IsMember({"omni", "exclusive", "greedy"}))
      ->default_str("omni");
  namespace sl = limits::scheduler;
  auto& p = o.s.params;
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
}

void add_service_flags(CLI::App& app, sched_options& o) {
  app.add_option("--listen", o.listen, "where the UCX node listens (default 127.0.0.1, any port)")
      ->type_name("HOST:PORT")
      ->transform(command_line::host_port());
  app.add_option("--info-file", o.info_file, "where \"ADDRESS TOKEN\" goes (mode 0600)")
      ->type_name("FILE")
      ->capture_default_str();
  app.add_option("--recover-s", o.recover_s,
                 "when the info file is already there (a previous instance wrote it: this is a restart), place "
                 "nothing for this many seconds so that the jobs still running on its GPUs can rejoin (msomni job "
                 "reconnects on its own); submissions meanwhile wait. 0: no wait")
      ->transform(command_line::within(recover_s_limit))
      ->capture_default_str();
  app.add_option("--metrics-port", o.metrics_port,
                 "serve Prometheus metrics at http://HOST:PORT/metrics on this port (\"auto\": a free one; "
                 "0: none); the address is printed at start and shown by `msomni sched-status`")
      ->type_name("PORT|auto")
      ->transform(metrics_port_value())
      ->capture_default_str();
  app.add_option("--metrics-host", o.metrics_host, "the IPv4 address the metrics endpoint binds")
      ->type_name("IPV4")
      ->transform(ipv4_address())
      ->capture_default_str();
  auto* store_flag = app.add_option("--store", o.store.store,
                                    "an etcd store for the service's leadership: instances with the same --store and "
                                    "--name share the service, one serves and the others stand by to take over "
                                    "(they need the same --info-file, on storage the jobs see)")
                         ->type_name("etcd://HOST:PORT[,HOST:PORT...]")
                         ->transform(store_url());
  app.add_option("--name", o.store.name, "the service's name in the store (its keys: /msomni/jobs/sched-NAME/)")
      ->needs(store_flag)
      ->capture_default_str();
  app.add_option("--lease-ttl-s", o.store.lease_ttl_s,
                 "seconds of the leader's lease: a standby takes over within it (and a third of it) of the "
                 "leader's death")
      ->transform(command_line::within(limits::control::lease_ttl_s))
      ->needs(store_flag)
      ->capture_default_str();
}

}  // namespace

sched_options::sched_options() {
  s.params.best_effort_drain_s = config::scheduler_section{}.best_effort_drain_s;  // the service's default
  store.name = "default";
}

void add_sched_flags(CLI::App& app, sched_options& o, setting_flags& settings) {
  add_cluster_flags(app, o);
  add_policy_flags(app, o, settings);
  add_service_flags(app, o);
}

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

std::map<std::string, std::string> shared_settings(const sched_options& o) {
  const auto& p = o.s.params;
  std::ostringstream policy;
  policy << sched::to_string(p.policy) << " " << p.idle_threshold << " " << p.min_confidence << " " << p.drain_period_s
         << " " << p.best_effort_drain_s << " " << p.min_run_window_s << " " << p.reservation_window_s << " "
         << p.queue_capacity << " " << p.critical_peak_memory_s << " " << p.critical_reserve_factor << " "
         << p.critical_slowdown_budget << " " << o.s.predictor.window_steps << " " << o.s.predictor.safety_factor;
  return {{"gpus", std::to_string(o.gpus)},
          {"gpus_per_node", std::to_string(o.per_node)},
          {"nodes_per_switch", std::to_string(o.per_switch)},
          {"policy", policy.str()}};
}

}  // namespace msomni::apps
