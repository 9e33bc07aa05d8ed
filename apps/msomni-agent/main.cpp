// msomni-agent --join HOST:PORT --node NAME [--token-file FILE] [--rack R] [--switch S]
//              [--slots N] [--heartbeat-s 10] [--log-dir DIR]
// A node agent for multi-node runs: joins the job's control process over UCX, offers its
// slots, starts and stops msomni-rank processes on this node when the orchestrator says so,
// and heartbeats. It proves the job's token (from --token-file, or $MSOMNI_JOB_TOKEN) to the
// control process and hands it to its ranks in their environment. It ends (stopping its ranks) when the control process goes away or on
// SIGINT/SIGTERM. Exit codes: 0 the job ended, 1 the control process never answered, 2 usage.
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"
#include "core/secret_file.hpp"
#include "core/stop_signal.hpp"
#include "node_agent.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;

namespace {
int usage(std::ostream& os, int code) {
  os << "usage: msomni-agent --join HOST:PORT --node NAME [--token-file FILE] [--rack R] [--switch S]\n"
        "                    [--slots N] [--heartbeat-s SECONDS] [--log-dir DIR]\n"
        "  --join       the control address msomni-run prints (also in RUN_DIR/control.json)\n"
        "  --node       this node's name (unique in the job)\n"
        "  --token-file the job's token: RUN_DIR/control.json or a file with the token alone (mode 0600);\n"
        "               without it, $MSOMNI_JOB_TOKEN\n"
        "  --rack, --switch  where the node sits, for topology-aware placement (default rack0/switch0)\n"
        "  --slots      rank processes this node may run (default 1)\n"
        "  --heartbeat-s  seconds between heartbeats (default 10)\n"
        "  --log-dir    where rank logs go (default /tmp/msomni-agent-NODE)\n";
  return code;
}
}  // namespace

int main(int argc, char** argv) {
  // Rank logs, and the checkpoints of the ranks it starts (they inherit the mask), are the
  // user's alone: 0700 directories, 0600 files.
  ::umask(077);
  agent::agent_settings s;
  s.slots = 1;
  std::string join, token_file;
  double heartbeat_s = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") return usage(std::cout, 0);
    if (i + 1 >= argc) {
      std::cerr << "msomni-agent: " << a << " needs a value\n";
      return usage(std::cerr, 2);
    }
    const std::string v = argv[++i];
    try {
      if (a == "--join") join = v;
      else if (a == "--token-file") token_file = v;
      else if (a == "--node") s.node = v;
      else if (a == "--rack") s.rack = v;
      else if (a == "--switch") s.switch_name = v;
      else if (a == "--slots") s.slots = std::stoll(v);
      else if (a == "--heartbeat-s") heartbeat_s = std::stod(v);
      else if (a == "--log-dir") s.log_dir = v;
      else {
        std::cerr << "msomni-agent: unknown option " << a << "\n";
        return usage(std::cerr, 2);
      }
    } catch (const std::exception&) {
      std::cerr << "msomni-agent: " << a << " " << v << " is not a number\n";
      return 2;
    }
  }
  if (join.empty() || s.node.empty() || s.node == "local" || s.slots < 1 || heartbeat_s <= 0) {
    std::cerr << "msomni-agent: --join, a --node name other than \"local\", --slots >= 1 and a positive --heartbeat-s are required\n";
    return usage(std::cerr, 2);
  }
  std::string listen_host;
  try {
    s.job_token = token_file.empty() ? take_secret_env(job_token_env) : read_secret_file(token_file);
    listen_host = transport::local_address_towards(join.substr(0, join.rfind(':')));
  } catch (const std::exception& e) {
    std::cerr << "msomni-agent: " << e.what() << "\n";
    return 2;
  }
  ::unsetenv(job_token_env);  // the ranks get it from us, explicitly
  if (s.job_token.empty()) {
    std::cerr << "msomni-agent: the job's token is needed: --token-file RUN_DIR/control.json, or " << job_token_env
              << "\n";
    return usage(std::cerr, 2);
  }
  if (s.log_dir.empty()) s.log_dir = "/tmp/msomni-agent-" + s.node;
  s.heartbeat_interval = std::chrono::milliseconds(static_cast<int64_t>(heartbeat_s * 1000));
  s.on_orchestrator_lost = [] { stop_signal::flag() = true; };
  try {
    s.rank_binary = agent::find_rank_binary();
  } catch (const std::exception& e) {
    std::cerr << "msomni-agent: " << e.what() << "\n";
    return 2;
  }
  caf::actor_system_config cfg;
  caf::actor_system sys{configure_process(cfg, 1)};
  int code = 0;
  {
    transport::ucx_node_options opt;
    opt.name = "agent-" + s.node;
    opt.secret = s.job_token;
    opt.listen_host = listen_host;  // where the control process can reach this node
    opt.keepalive_interval = s.heartbeat_interval;
    std::atomic<bool> refused{false};  // outlives the hub that sets it
    transport::transport_hub hub(opt);
    hub.add_refusal_listener([&](const std::string& address, const std::string& reason) {
      std::cerr << "msomni-agent: " << address << " refused: " << reason << "\n";
      refused = true;
    });
    transport::gateway gw(sys, hub);
    hub.node().connect(join);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!hub.node().wait_up("control", 100ms) && !refused && std::chrono::steady_clock::now() < deadline) {
    }
    if (!hub.node().is_up("control")) {
      std::cerr << "msomni-agent: the control process at " << join
                << (refused ? " and this agent do not share the job's token\n" : " never answered\n");
      return 1;
    }
    stop_signal::install();
    auto agent = agent::spawn_node_agent(sys, s, gw.remote_actor("control", "orchestrator"));
    gw.publish("agent", agent);
    std::cout << "msomni-agent: node " << s.node << " (rack " << s.rack << ", switch " << s.switch_name << ", "
              << s.slots << " slots) joined " << join << std::endl;
    while (!stop_signal::flag()) std::this_thread::sleep_for(100ms);
    caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
    std::cout << "msomni-agent: node " << s.node << " done" << std::endl;
  }
  return code;
}
