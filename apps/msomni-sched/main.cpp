// msomni-sched [--config FILE] [--gpus N] [--gpus-per-node N] [--nodes-per-switch N] [--policy omni|exclusive|greedy]
//              [--idle-threshold X] [--drain-s S] [--min-run-window-s S] [--reservation-window-s S]
//              [--queue-capacity N] [--listen HOST:PORT] [--info-file FILE]
// The co-location scheduler as a service: the scheduler actor shell around the same
// scheduler_core that msomni-sim replays, on a UCX node named "sched". Jobs reach it with
// `msomni job --scheduler-info FILE ...`. It publishes the actor under a name that carries a
// random token and writes "ADDRESS TOKEN" to the info file (mode 0600): without the token a
// job cannot address it. Every decision is printed with its reason. Ends on
// SIGINT/SIGTERM. Exit codes: 0 stopped, 1 could not start, 2 usage.
#include "config/config_loader.hpp"
#include "core/clock.hpp"
#include "core/secret_file.hpp"
#include "core/stop_signal.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"
#include "scheduler_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <functional>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;

namespace {
int usage(std::ostream& os, int code) {
  os << "usage: msomni-sched [options]\n"
        "  --config FILE            a TOML file with a [scheduler] table (configs/scheduler/); the keys\n"
        "                           are step_window, idle_threshold, safety_factor, drain_period_s,\n"
        "                           min_run_window_s, reservation_window_s, queue_capacity, policy,\n"
        "                           min_confidence, critical_peak_memory_s, critical_reserve_factor,\n"
        "                           critical_slowdown_budget;\n"
        "                           flags below override it. A bad file is refused with FILE:LINE:COL\n"
        "  --gpus N                 GPUs in the cluster (default 8)\n"
        "  --gpus-per-node N        (default 8)      --nodes-per-switch N (default 4)\n"
        "  --policy P               omni | exclusive | greedy (default omni)\n"
        "  --idle-threshold X       (0.35)  --drain-s S (600)  --min-run-window-s S (7200)\n"
        "  --reservation-window-s S (1800)  --queue-capacity N (1024)\n"
        "  --critical-slowdown-budget X (0.01)  share of a critical job's run time its guests may\n"
        "                           cost it (measured from its step reports, steps with guests\n"
        "                           against steps alone); past it the job lends nothing until its\n"
        "                           run has grown back under it\n"
        "  --listen HOST:PORT       where the UCX node listens (default 127.0.0.1, any port)\n"
        "  --info-file FILE         where \"ADDRESS TOKEN\" goes (default ./msomni-sched.info, mode 0600)\n"
        "  --recover-s S            when the info file is already there (a previous instance wrote it:\n"
        "                           this is a restart), place nothing for S seconds (default 10) so\n"
        "                           that the jobs still running on its GPUs can rejoin (msomni job\n"
        "                           reconnects on its own); submissions meanwhile wait. 0: no wait\n";
  return code;
}

// Prints every decision with its reason (the scheduler's observer).
caf::behavior decision_printer(caf::event_based_actor*) {
  return {[](const msg::job_command& c) {
    std::cout << "decision t=" << c.at_s << "s " << sched::to_string(static_cast<sched::command_kind>(c.kind)) << " "
              << c.job;
    if (!c.gpus.empty()) std::cout << " gpus=" << c.gpus.size();
    if (c.drain_s > 0) std::cout << " drain=" << c.drain_s << "s";
    std::cout << ": " << c.reason << std::endl;
  }};
}
}  // namespace

int main(int argc, char** argv) {
  sched::scheduler_settings s;
  uint32_t gpus = 8, per_node = 8, per_switch = 4;
  std::string listen, info_file = "msomni-sched.info";
  double recover_s = 10;
  std::map<std::string, std::function<void(const std::string&)>> flags = {
      {"--gpus", [&](const std::string& v) { gpus = static_cast<uint32_t>(std::stoul(v)); }},
      {"--gpus-per-node", [&](const std::string& v) { per_node = static_cast<uint32_t>(std::stoul(v)); }},
      {"--nodes-per-switch", [&](const std::string& v) { per_switch = static_cast<uint32_t>(std::stoul(v)); }},
      {"--policy", [&](const std::string& v) {
         if (!sched::parse_policy(v, s.params.policy)) throw std::invalid_argument(v);
       }},
      {"--idle-threshold", [&](const std::string& v) { s.params.idle_threshold = std::stod(v); }},
      {"--drain-s", [&](const std::string& v) { s.params.drain_period_s = std::stod(v); }},
      {"--min-run-window-s", [&](const std::string& v) { s.params.min_run_window_s = std::stod(v); }},
      {"--reservation-window-s", [&](const std::string& v) { s.params.reservation_window_s = std::stod(v); }},
      {"--queue-capacity", [&](const std::string& v) { s.params.queue_capacity = std::stoul(v); }},
      {"--critical-slowdown-budget",
       [&](const std::string& v) { s.params.critical_slowdown_budget = std::stod(v); }},
      {"--listen", [&](const std::string& v) { listen = v; }},
      {"--info-file", [&](const std::string& v) { info_file = v; }},
      {"--recover-s", [&](const std::string& v) { recover_s = std::stod(v); }},
  };
  // The file first, so that flags override it.
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--config") continue;
    try {
      const auto c = config::load_scheduler_file(argv[i + 1]);
      sched::parse_policy(c.policy, s.params.policy);  // the schema admits only the three names
      s.params.idle_threshold = c.idle_threshold;
      s.params.min_confidence = c.min_confidence;
      s.params.drain_period_s = c.drain_period_s;
      s.params.min_run_window_s = c.min_run_window_s;
      s.params.reservation_window_s = c.reservation_window_s;
      s.params.queue_capacity = static_cast<size_t>(c.queue_capacity);
      s.params.critical_peak_memory_s = c.critical_peak_memory_s;
      s.params.critical_reserve_factor = c.critical_reserve_factor;
      s.params.critical_slowdown_budget = c.critical_slowdown_budget;
      s.predictor.window_steps = static_cast<size_t>(c.step_window);
      s.predictor.safety_factor = c.safety_factor;
    } catch (const config::config_errors& e) {
      std::cerr << "msomni-sched: the configuration is invalid; nothing was started.\n" << e.what();
      return 2;
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") return usage(std::cout, 0);
    if (a == "--config") {
      ++i;
      continue;
    }
    auto f = flags.find(a);
    if (f == flags.end()) {
      std::cerr << "msomni-sched: unknown option " << a << "\n";
      return usage(std::cerr, 2);
    }
    if (i + 1 >= argc) {
      std::cerr << "msomni-sched: " << a << " needs a value\n";
      return usage(std::cerr, 2);
    }
    try {
      f->second(argv[++i]);
    } catch (const std::exception&) {
      std::cerr << "msomni-sched: " << a << " " << argv[i] << ": not a valid value\n";
      return 2;
    }
  }
  if (gpus == 0 || per_node == 0 || per_switch == 0 || s.params.reservation_window_s <= 0 ||
      s.params.idle_threshold < 0 || s.params.idle_threshold > 1 || s.params.drain_period_s < 0 ||
      s.params.queue_capacity == 0 || !(recover_s >= 0) || !(s.params.critical_slowdown_budget >= 0) ||
      s.params.critical_slowdown_budget > 1) {
    std::cerr << "msomni-sched: --gpus, --gpus-per-node, --nodes-per-switch, --queue-capacity and "
                 "--reservation-window-s must be positive, --idle-threshold and --critical-slowdown-budget "
                 "in [0, 1], --drain-s and --recover-s >= 0\n";
    return 2;
  }
  // An info file left by a previous instance means its jobs may still run and will rejoin.
  std::error_code exists_error;
  if (std::filesystem::exists(info_file, exists_error)) s.recover_s = recover_s;
  s.topo = sched::topology::uniform(gpus, per_node, per_switch);

  caf::actor_system_config cfg;
  caf::actor_system sys{configure_process(cfg, 2)};
  transport::ucx_node_options opt;
  opt.name = "sched";
  if (!listen.empty()) {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
      std::cerr << "msomni-sched: --listen wants HOST:PORT\n";
      return 2;
    }
    opt.listen_host = listen.substr(0, colon);
    opt.listen_port = static_cast<uint16_t>(std::stoul(listen.substr(colon + 1)));
  }
  real_clock clock;
  try {
    transport::transport_hub hub(opt);
    transport::gateway gw(sys, hub);
    const std::string token = random_token();
    auto printer = sys.spawn(decision_printer);
    auto scheduler = sched::spawn_scheduler(sys, s, {&clock, printer});
    gw.publish("scheduler-" + token, scheduler);
    write_private_file(info_file, hub.node().address() + " " + token + "\n");
    stop_signal::install();
    std::cout << "msomni-sched: " << gpus << " GPUs (" << per_node << " per node), policy "
              << sched::to_string(s.params.policy) << " (idle threshold " << s.params.idle_threshold
              << ", slowdown budget " << s.params.critical_slowdown_budget * 100 << "%), listening at "
              << hub.node().address()
              << ", address and token in " << info_file << std::endl;
    if (s.recover_s > 0)
      std::cout << "msomni-sched: restarted (" << info_file << " was there): placing nothing for " << s.recover_s
                << " s while the previous instance's jobs rejoin" << std::endl;
    while (!stop_signal::flag()) std::this_thread::sleep_for(100ms);
    caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(printer, caf::exit_reason::user_shutdown);
    std::cout << "msomni-sched: stopped" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "msomni-sched: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
