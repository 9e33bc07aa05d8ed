// msomni-agent --join HOST:PORT --node NAME [options]: see --help.
// A node agent for multi-node runs: joins the job's control process over UCX, offers its
// slots, starts and stops msomni-rank processes on this node when the orchestrator says so,
// runs the job's pre-flight checks of this node when the control process asks (node_checker),
// and heartbeats. It proves the job's token (from --token-file, or $MSOMNI_JOB_TOKEN) to the
// control process and hands it to its ranks in their environment. It ends (stopping its ranks)
// when the control process goes away or on SIGINT/SIGTERM. When the job keeps its control state
// in a store (the --token-file control.json names one), the control process may die and a
// standby take over: the agent then keeps its ranks training (they rejoin the next leader
// themselves), reads control.json until it names another leader, and joins that one; it ends
// when the leader it lost had ended the job (its summary.json says so), or stops its ranks and
// exits 1 when no leader comes within control.json's follow_limit_s.
// Exit codes: 0 the job ended, 1 the control process never answered (or no next leader came),
// 2 usage.
// When the job has metrics on (its control.json, given as --token-file, names a
// metrics_address), the agent pushes its own series (its actor, UCX node and gateway) to the
// control process.
// Under Slurm (--slurm-nodes, how msomni-run starts one agent per allocated node with srun)
// the node is $SLURMD_NODENAME and its place and slots come from the table msomni-run read
// from the allocation; SIGTERM and SIGINT, which Slurm sends every process of the job's steps
// (preemption, `scancel --signal`, a time limit's warning), do not stop the agent or its ranks:
// the agent tells the control process, which stops the job at a barrier with a final checkpoint.
#include "gateway/gateway.hpp"
#include "core/log.hpp"
#include "hub/transport_hub.hpp"
#include "hub/transport_metrics.hpp"
#include "messages/catalog.hpp"
#include "metrics/metrics_pusher.hpp"
#include "core/command_line.hpp"
#include "core/secret_file.hpp"
#include "core/stop_signal.hpp"
#include "core/control_file.hpp"
#include "leader_follower.hpp"
#include "node_agent.hpp"
#include "node_checker.hpp"
#include "slurm/slurm_allocation.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <sys/stat.h>
#include <unistd.h>


#include <atomic>
#include <cstdlib>
#include <chrono>
#include <iostream>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;

namespace {

// Under srun: this node is $SLURMD_NODENAME, its place and slots its row of msomni-run's
// table (slurm::agent_table). "" when found, else why not.
std::string take_slurm_row(const std::string& table, agent::agent_settings& s) {
  const char* env = std::getenv("SLURMD_NODENAME");
  if (!env || !*env) return "SLURMD_NODENAME is not set: --slurm-nodes is for an agent that srun started";
  try {
    const auto row = slurm::agent_row(table, env);
    s.node = row.name;
    s.rack = row.rack;
    s.switch_name = row.switch_name;
    s.slots = row.slots;
    return {};
  } catch (const slurm::list_error& e) {
    return std::string("--slurm-nodes: ") + e.what();
  }
}

// What the command line sets besides the agent's own settings.
struct agent_args {
  std::string join, token_file, slurm_nodes;
  double heartbeat_s = 10;
};

// Set by the agent actor when its leader is gone; read by the main loop.
std::atomic<bool> orchestrator_lost{false};

void add_agent_flags(CLI::App& app, agent::agent_settings& s, agent_args& a) {
  namespace limits = config::limits;
  app.add_option("--join", a.join, "the control address msomni-run prints (also in RUN_DIR/control.json)")
      ->type_name("HOST:PORT")
      ->required();
  auto* slurm_opt = app.add_option("--slurm-nodes", a.slurm_nodes,
                                   "started by msomni-run with srun in a Slurm allocation: the allocation's nodes as "
                                   "NAME:RACK:SWITCH:SLOTS,...; this node is $SLURMD_NODENAME, and Slurm's stop "
                                   "signals go to the control process instead of stopping this node")
                        ->type_name("TABLE");
  auto* node_opt = app.add_option("--node", s.node, "this node's name (unique in the job; not \"local\")")
      ->type_name("NAME")
      ->check([](const std::string& v) -> std::string {
        if (v.empty()) return "must not be empty";
        return v == "local" ? "\"local\" names the control node" : "";
      });
  app.add_option("--token-file", a.token_file,
                 "the job's token: RUN_DIR/control.json or a file with the token alone (mode 0600); without it, "
                 "$" + std::string(job_token_env))
      ->type_name("FILE");
  app.add_option("--rack", s.rack, "where the node sits, for topology-aware placement")->capture_default_str();
  app.add_option("--switch", s.switch_name, "the node's switch, for topology-aware placement")
      ->capture_default_str();
  command_line::add_number(app, "--slots", s.slots, limits::cluster::node_slots,
                           "rank processes this node may run (as cluster.nodes[].slots)");
  command_line::add_number(app, "--heartbeat-s", a.heartbeat_s, limits::elasticity::heartbeat_interval_s,
                           "seconds between heartbeats (as elasticity.heartbeat_interval_s)");
  app.add_option("--log-dir", s.log_dir, "where rank logs go (default /tmp/msomni-agent-NODE)")->type_name("DIR");
  node_opt->excludes(slurm_opt);
}

// The settings the parsed flags, the token and control.json make. nullopt: go on; else the
// exit code.
std::optional<int> settle(CLI::App& app, agent::agent_settings& s, const agent_args& a, std::string& listen_host,
                          std::optional<control_file>& control) {
  if (!a.slurm_nodes.empty()) {
    if (const auto why = take_slurm_row(a.slurm_nodes, s); !why.empty()) return command_line::refuse(app, why);
    s.ranks_ignore_stop_signals = true;
  } else if (s.node.empty()) {
    return command_line::refuse(app, "--node NAME is needed (or --slurm-nodes, under srun)");
  }
  try {
    s.job_token = a.token_file.empty() ? take_secret_env(job_token_env) : read_secret_file(a.token_file);
    listen_host = transport::local_address_towards(a.join.substr(0, a.join.rfind(':')));
  } catch (const std::exception& e) {
    std::cerr << "msomni-agent: " << e.what() << "\n";
    return 2;
  }
  ::unsetenv(job_token_env);  // the ranks get it from us, explicitly
  // control.json, when that is the token file: whether the job has metrics (it names their
  // endpoint) and whether its leader may change (a control store: follow it).
  control = a.token_file.empty() ? std::nullopt : read_control_file(a.token_file);
  if (control && !control->metrics_address.empty()) s.metrics = std::make_shared<metrics::metrics_registry>();
  s.follow_leader = control && !control->store.empty();
  if (s.job_token.empty())
    return command_line::refuse(app, "the job's token is needed: --token-file RUN_DIR/control.json, or " +
                                         std::string(job_token_env));
  if (s.log_dir.empty()) s.log_dir = "/tmp/msomni-agent-" + s.node;
  s.heartbeat_interval = std::chrono::milliseconds(static_cast<int64_t>(a.heartbeat_s * 1000));
  s.on_orchestrator_lost = [following = s.follow_leader] {
    orchestrator_lost = true;
    if (!following) stop_signal::flag() = true;
  };
  try {
    s.rank_binary = agent::find_rank_binary();
  } catch (const std::exception& e) {
    std::cerr << "msomni-agent: " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

// The agent's actors and the leader it reports to, as the main loop holds them.
struct agent_run {
  caf::actor_system& sys;
  agent::agent_settings& s;
  transport::transport_hub& hub;
  transport::gateway& gw;
  agent::node_agent_actor agent;
  msg::orchestrator_actor orchestrator;
  caf::actor pusher;
};

// Until the job ends, a stop, or (following the leader) no next leader in time. Returns the
// exit code.
int watch(agent_run& r, apps::leader_follower& follower, bool under_slurm) {
  for (;;) {
    std::this_thread::sleep_for(100ms);
    if (r.s.follow_leader && !stop_signal::flag()) {
      if (!orchestrator_lost && !r.hub.node().is_up("control")) caf::anon_send(r.agent, agent::leader_atom::value);
      if (!orchestrator_lost) continue;
      const auto next = follower.step(r.hub, r.gw);
      if (next.what == apps::leader_follower::outcome::waiting) continue;
      if (next.what == apps::leader_follower::outcome::ended) return 0;
      if (next.what == apps::leader_follower::outcome::gave_up) return 1;
      r.orchestrator = next.orchestrator;
      orchestrator_lost = false;
      caf::anon_send(r.agent, agent::leader_atom::value, r.orchestrator);
      if (r.pusher) {
        caf::anon_send_exit(r.pusher, caf::exit_reason::user_shutdown);
        r.pusher = metrics::spawn_metrics_pusher(r.sys, r.s.metrics, r.orchestrator, {r.s.node, "", r.s.node});
      }
      continue;
    }
    if (!stop_signal::flag()) continue;
    if (!under_slurm || orchestrator_lost) return 0;
    // Slurm signalled the job: the control process decides, its ranks stop at a barrier.
    const int sig = stop_signal::number().exchange(0);
    stop_signal::flag() = false;
    std::cout << "msomni-agent: node " << r.s.node << " got signal " << sig
              << " from Slurm; the control process stops the job at its next barrier" << std::endl;
    caf::send_as(r.agent, r.orchestrator, msg::agent_signalled{r.s.node, sig, "slurm"});
  }
}

// Joins the control process at `a.join` and serves the node until watch() ends. Returns the
// exit code.
int serve(caf::actor_system& sys, agent::agent_settings& s, const agent_args& a, const std::string& listen_host,
          const std::optional<control_file>& control) {
  transport::ucx_node_options opt;
  opt.busy_poll = transport::control_plane_busy_poll;
  opt.name = "agent-" + s.node;
  opt.secret = s.job_token;
  opt.listen_host = listen_host;  // where the control process can reach this node
  opt.keepalive_interval = s.heartbeat_interval;
  std::atomic<bool> refused{false};  // outlives the hub that sets it
  transport::transport_hub hub(opt);
  hub.add_refusal_listener([&](const std::string& address, const std::string& reason) {
    MSOMNI_LOG(warn, "agent") << address << " refused: " << reason;
    refused = true;
  });
  transport::gateway gw(sys, hub);
  metrics::metrics_registry::refresher_handle transport_series;  // before hub and gw go
  if (s.metrics) transport_series = transport::watch_transport(*s.metrics, hub, gw);
  hub.node().connect(a.join);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!hub.node().wait_up("control", 100ms) && !refused && std::chrono::steady_clock::now() < deadline) {
  }
  if (!hub.node().is_up("control")) {
    std::cerr << "msomni-agent: the control process at " << a.join
              << (refused ? " and this agent do not share the job's token\n" : " never answered\n");
    return 1;
  }
  stop_signal::install();
  agent_run r{sys, s, hub, gw, {}, gw.remote_actor<msg::orchestrator_actor>("control", "orchestrator"), {}};
  s.node_checker = health::spawn_node_checker(sys, {s.node, listen_host, s.job_token, ""});
  r.agent = agent::spawn_node_agent(sys, s, r.orchestrator);
  gw.publish("agent", msg::agent_actor{r.agent});
  if (s.metrics) r.pusher = metrics::spawn_metrics_pusher(sys, s.metrics, r.orchestrator, {s.node, "", s.node});
  std::cout << "msomni-agent: node " << s.node << " (rack " << s.rack << ", switch " << s.switch_name << ", "
            << s.slots << " slots) joined " << a.join << std::endl;
  apps::leader_follower follower(a.token_file, a.join, control && control->address == a.join ? control->pid : 0, s.node);
  const int code = watch(r, follower, !a.slurm_nodes.empty());
  caf::anon_send_exit(r.agent, caf::exit_reason::user_shutdown);
  if (r.pusher) caf::anon_send_exit(r.pusher, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(s.node_checker, caf::exit_reason::user_shutdown);
  std::cout << "msomni-agent: node " << s.node << " done" << std::endl;
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Rank logs, and the checkpoints of the ranks it starts (they inherit the mask), are the
  // user's alone: 0700 directories, 0600 files.
  ::umask(077);
  agent::agent_settings s;
  s.slots = 1;
  agent_args a;
  CLI::App app{"A node agent for multi-node runs: joins the job's control process, checks this node when asked "
               "(the job's pre-flight), offers its slots, starts and stops msomni-rank processes on this node when "
               "the orchestrator says so, and heartbeats.",
               "msomni-agent"};
  command_line::set_conventions(app);
  app.footer("Exit codes: 0 the job ended, 1 the control process never answered (or, with a control store, no next "
             "leader came within control.json's follow_limit_s), 2 usage.");
  add_agent_flags(app, s, a);
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;
  std::string listen_host;
  std::optional<control_file> control;
  if (const auto rc = settle(app, s, a, listen_host, control)) return *rc;
  caf::actor_system_config cfg;
  caf::actor_system sys{configure_process(cfg, 1, idle_threads::wake)};
  return serve(sys, s, a, listen_host, control);
}
