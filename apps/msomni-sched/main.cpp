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
#include "sched_flags.hpp"

#include "config/config_error.hpp"

#include "core/clock.hpp"
#include "core/secret_file.hpp"
#include "core/stop_signal.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "hub/transport_metrics.hpp"
#include "messages/actor_interfaces.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_endpoint.hpp"
#include "scheduler_metrics.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>
#include <variant>

using namespace msomni;
using namespace std::chrono_literals;

namespace {

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

// The settings of the file, then the flags; the recovery wait of a restart. nullopt: go on;
// else the exit code.
std::optional<int> settle(apps::sched_options& o, const apps::setting_flags& settings) {
  if (!o.config_file.empty()) {
    try {
      apps::load_config_file(o.config_file, o.s);
    } catch (const config::config_errors& e) {
      std::cerr << "msomni-sched: the configuration is invalid; nothing was started.\n" << e.what();
      return 2;
    }
  }
  settings.apply();
  // An info file left by a previous instance means its jobs may still run and will rejoin.
  std::error_code exists_error;
  if (std::filesystem::exists(o.info_file, exists_error)) o.s.recover_s = o.recover_s;
  o.s.topo = sched::topology::uniform(o.gpus, o.per_node, o.per_switch);
  return std::nullopt;
}

// With --store: this instance leads the service (or an exit code: a standby that never led,
// or settings other than the service's).
std::variant<std::unique_ptr<apps::sched_leader>, int> elect(apps::sched_options& o) {
  if (o.store.store.empty()) return std::unique_ptr<apps::sched_leader>{};
  o.store.info_file = o.info_file;
  o.store.settings = apps::shared_settings(o);
  auto elected = apps::lead_scheduler(o.store);
  if (auto* leader = std::get_if<std::unique_ptr<apps::sched_leader>>(&elected); leader && (*leader)->took_over)
    o.s.recover_s = o.recover_s;  // the jobs of the leader before rejoin
  return elected;
}

transport::ucx_node_options node_options(const apps::sched_options& o) {
  transport::ucx_node_options opt;
  opt.busy_poll = transport::control_plane_busy_poll;
  opt.name = "sched";
  if (!o.listen.empty()) {  // HOST:PORT, checked by the parser
    const auto colon = o.listen.rfind(':');
    opt.listen_host = o.listen.substr(0, colon);
    opt.listen_port = static_cast<uint16_t>(std::stoul(o.listen.substr(colon + 1)));
  }
  return opt;
}

void say_started(const apps::sched_options& o, const std::string& address, const metrics::metrics_endpoint* http,
                 const apps::sched_leader* leader) {
  const auto& p = o.s.params;
  std::cout << "msomni-sched: " << o.gpus << " GPUs (" << o.per_node << " per node), policy " << sched::to_string(p.policy)
            << " (idle threshold " << p.idle_threshold << ", slowdown budget " << p.critical_slowdown_budget * 100
            << "%), listening at " << address << ", address and token in " << o.info_file << std::endl;
  if (http) std::cout << "msomni-sched: metrics http://" << http->address() << "/metrics" << std::endl;
  if (o.s.recover_s > 0)
    std::cout << "msomni-sched: restarted ("
              << (leader && leader->took_over ? "took over from " + leader->previous : o.info_file + " was there")
              << "): placing nothing for " << o.s.recover_s << " s while the previous instance's jobs rejoin"
              << std::endl;
}

// Serves until SIGINT/SIGTERM. Returns the exit code.
int serve(const apps::sched_options& o, apps::sched_leader* leader) {
  caf::actor_system_config cfg;
  caf::actor_system sys{configure_process(cfg, 2, idle_threads::wake)};
  real_clock clock;
  // The endpoint first, so that the scheduler's status can name it.
  std::shared_ptr<sched::scheduler_metrics> metrics;
  std::unique_ptr<metrics::metrics_endpoint> metrics_http;
  if (o.metrics_port != "0") {
    metrics = std::make_shared<sched::scheduler_metrics>(std::make_shared<metrics::metrics_registry>());
    const auto port = o.metrics_port == "auto" ? uint16_t{0} : static_cast<uint16_t>(std::stoul(o.metrics_port));
    metrics_http =
        std::make_unique<metrics::metrics_endpoint>(o.metrics_host, port, [metrics] { return metrics->collect(); });
  }
  transport::transport_hub hub(node_options(o));
  transport::gateway gw(sys, hub);
  metrics::metrics_registry::refresher_handle transport_series;  // destroyed before gw and hub
  if (metrics) transport_series = transport::watch_transport(*metrics->registry(), hub, gw);
  const std::string token = random_token();
  auto printer = sys.spawn(decision_printer, metrics ? metrics->registry() : nullptr,
                           leader ? leader->leadership.get() : nullptr);
  auto scheduler = sched::spawn_scheduler(sys, o.s, {&clock, printer, metrics, metrics_http ? metrics_http->address() : ""});
  gw.publish("scheduler-" + token, scheduler);
  write_private_file(o.info_file, hub.node().address() + " " + token + "\n");
  if (leader) leader->leadership->announce(hub.node().address(), metrics_http ? metrics_http->address() : "");
  stop_signal::install();
  say_started(o, hub.node().address(), metrics_http.get(), leader);
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
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  apps::sched_options o;
  CLI::App app{"The co-location scheduler as a service: places jobs that `msomni job --scheduler-info FILE` "
               "submits and prints every decision with its reason. Ends on SIGINT/SIGTERM.",
               "msomni-sched"};
  command_line::set_conventions(app);
  app.footer("Exit codes: 0 stopped, 1 could not start, 2 usage, a bad --config file or settings other than the "
             "service's in the store, 6 deposed (another instance leads the service).");
  apps::setting_flags settings(app);
  apps::add_sched_flags(app, o, settings);
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;
  if (const auto rc = settle(o, settings)) return *rc;
  auto elected = elect(o);
  if (auto* rc = std::get_if<int>(&elected)) return *rc;
  try {
    return serve(o, std::get<std::unique_ptr<apps::sched_leader>>(elected).get());
  } catch (const std::exception& e) {
    std::cerr << "msomni-sched: " << e.what() << "\n";
    return 1;
  }
}
