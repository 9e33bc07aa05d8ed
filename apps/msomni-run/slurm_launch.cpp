// msomni-run on a Slurm allocation (see slurm_launch.hpp).
#include "slurm_launch.hpp"

#include "core/sibling_binary.hpp"
#include "hub/transport_hub.hpp"

#include <netdb.h>
#include <arpa/inet.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>

namespace msomni::apps {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> from_environment(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// Node -> its NodeAddr, from one `scontrol -o show node LIST` (a line per node); the nodes
// Slurm does not describe are left out.
std::map<std::string, std::string> node_addresses(const std::string& node_list) {
  std::map<std::string, std::string> out;
  const auto listed = run_tool({"scontrol", "-o", "show", "node", node_list});
  if (listed.code != 0) return out;
  std::istringstream lines(listed.text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string w, name, addr;
    while (words >> w) {
      if (w.rfind("NodeName=", 0) == 0) name = w.substr(9);
      if (w.rfind("NodeAddr=", 0) == 0) addr = w.substr(9);
    }
    if (!name.empty() && !addr.empty()) out[name] = addr;
  }
  return out;
}

// An IPv4 address for `host` (a name or an address), "" when it does not resolve.
std::string ipv4_of(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return {};
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(res);
  return text;
}

}  // namespace

tool_output run_tool(const std::vector<std::string>& argv) {
  process::spawn_options o;
  o.search_path = true;
  o.in = process::stream::null();
  o.out = process::stream::pipe();
  o.err = process::stream::same_as_stdout();
  tool_output r;
  try {
    auto c = process::spawn(argv, o);
    r.text = process::read_to_end(c.stdout_fd());
    r.code = c.wait()->shell_code();
  } catch (const std::exception& e) {
    r.text = e.what();
  }
  return r;
}

std::optional<slurm_plan> plan_slurm(config::job_config& cfg, std::vector<std::string>& problems) {
  const auto job = from_environment("SLURM_JOB_ID");
  const bool inside = job && !job->empty();
  if (cfg.cluster.slurm == "off") return std::nullopt;
  if (!inside) {
    if (cfg.cluster.slurm == "require")
      problems.push_back("cluster.slurm = \"require\": msomni-run runs outside a Slurm allocation (SLURM_JOB_ID is not "
                         "set); start it inside sbatch or salloc");
    if (cfg.cluster.release_idle_nodes)
      problems.push_back("cluster.release_idle_nodes = true gives nodes back to Slurm, but msomni-run runs outside a "
                         "Slurm allocation (SLURM_JOB_ID is not set)");
    return std::nullopt;
  }
  // topology/tree, when the cluster has it: racks and switches. Without it every node counts
  // as one switch.
  const auto topology = run_tool({"scontrol", "show", "topology"});
  slurm_plan plan;
  try {
    plan.alloc = *slurm::read_allocation(from_environment, topology.code == 0 ? topology.text : "");
  } catch (const std::exception& e) {
    problems.push_back(std::string("the Slurm allocation cannot be read: ") + e.what());
    return std::nullopt;
  }
  auto& a = plan.alloc;
  plan.notes.push_back("Slurm job " + a.job_id + ": " + std::to_string(a.nodes.size()) + " node(s) " + a.node_list +
                       ", " + std::to_string(a.total_slots()) + " rank slots from " + a.slots_from);
  plan.notes.push_back(a.topology_known ? "racks and switches from Slurm's topology/tree (scontrol show topology)"
                                        : "Slurm reports no switch for some node (no topology/tree): those nodes count as "
                                          "rack0, switch0");
  if (!cfg.cluster.nodes.empty())
    plan.notes.push_back("the allocation's nodes replace the " + std::to_string(cfg.cluster.nodes.size()) +
                         " of [[cluster.nodes]]");
  cfg.cluster.nodes.clear();
  // A node's host (for health.node_port's check): its NodeAddr, else its name.
  auto addresses = node_addresses(a.node_list);
  for (const auto& n : a.nodes) {
    addresses.emplace(n.name, n.name);
    cfg.cluster.nodes.push_back({n.name, addresses[n.name], n.rack, n.switch_name, n.slots});
  }
  if (a.total_slots() < cfg.elasticity.replicas)
    problems.push_back("elasticity.replicas = " + std::to_string(cfg.elasticity.replicas) + " needs more rank slots than the " +
                       std::to_string(a.total_slots()) + " of Slurm job " + a.job_id + " (" + a.slots_from +
                       "); ask Slurm for more (-N, --gpus-per-node, --cpus-per-task) or lower replicas");
  else if (a.total_slots() < cfg.elasticity.max_replicas)
    plan.notes.push_back("elasticity.max_replicas = " + std::to_string(cfg.elasticity.max_replicas) + " is above the " +
                         std::to_string(a.total_slots()) + " slots of the allocation: scale-up stops there");
  // The agents must reach the control process: unless the config names the address, listen on
  // this host's address towards the first other node (its NodeAddr).
  if (!cfg.key_locations.count("cluster.control_host")) {
    std::string peer;
    for (const auto& n : a.nodes)
      if (n.name != a.this_node || a.nodes.size() == 1) {
        peer = ipv4_of(addresses[n.name]);
        if (!peer.empty()) break;
      }
    if (peer.empty()) {
      plan.notes.push_back("no node address resolved from scontrol: the control process listens on " +
                           cfg.cluster.control_host + " (set cluster.control_host to a reachable address)");
    } else {
      try {
        cfg.cluster.control_host = transport::local_address_towards(peer);
        plan.notes.push_back("the control process listens on " + cfg.cluster.control_host + ", its address towards " + peer);
      } catch (const std::exception& e) {
        plan.notes.push_back(std::string("no local address towards the nodes (") + e.what() + "): listening on " +
                             cfg.cluster.control_host);
      }
    }
  }
  return plan;
}

slurm_agent_step::slurm_agent_step(const slurm_plan& plan, const std::string& control_address,
                                   const fs::path& run_dir, double heartbeat_s)
    : alloc_(plan.alloc) {
  for (const auto& n : alloc_.nodes) held_.push_back(n.name);
  const auto agent = find_sibling_binary("MSOMNI_AGENT_BINARY", {"msomni-agent", "../msomni-agent/msomni-agent"});
  const auto n = std::to_string(alloc_.nodes.size());
  int64_t min_cpus = 0;
  for (const auto& node : alloc_.nodes)
    if (node.cpus > 0) min_cpus = min_cpus == 0 ? node.cpus : std::min(min_cpus, node.cpus);
  std::vector<std::string> argv{"srun", "--job-name=msomni-agents", "--nodes=" + n, "--ntasks=" + n,
                                "--ntasks-per-node=1", "--nodelist=" + alloc_.node_list,
                                // a node lost takes its agent, not the step: the job recovers on the rest
                                "--no-kill", "--kill-on-bad-exit=0", "--label", "--unbuffered"};
  // The agent's step holds every CPU (and GPU) of its node, for the ranks it starts.
  if (min_cpus > 0) argv.push_back("--cpus-per-task=" + std::to_string(min_cpus));
  if (alloc_.gpu_slots) argv.push_back("--gpus-per-task=" + std::to_string(alloc_.nodes.front().slots));
  const auto logs = run_dir / "logs";
  fs::create_directories(logs);
  std::ostringstream hb;
  hb << heartbeat_s;
  argv.insert(argv.end(), {agent, "--join", control_address, "--slurm-nodes", slurm::agent_table(alloc_.nodes), "--token-file",
                           (run_dir / "control.json").string(), "--heartbeat-s", hb.str(), "--log-dir",
                           logs.string()});
  for (const auto& a : argv) command_line_ += (command_line_.empty() ? "" : " ") + a;
  process::spawn_options o;
  o.search_path = true;
  o.in = process::stream::null();
  o.out = process::stream::file((logs / "slurm-agents.log").string());
  o.err = process::stream::same_as_stdout();
  o.own_process_group = true;  // a Ctrl-C at msomni-run's terminal is msomni-run's to handle
  srun_ = process::spawn(argv, o);
}

slurm_agent_step::~slurm_agent_step() {
  using namespace std::chrono_literals;
  if (!srun_.wait_for(20s)) {
    srun_.signal(SIGTERM);  // srun ends the step: Slurm signals and then kills its tasks
    if (!srun_.wait_for(20s)) srun_.signal(SIGKILL);
  }
  srun_.wait();
}

std::string slurm_agent_step::release(const std::vector<std::string>& nodes) {
  for (const auto& n : nodes)
    if (n == alloc_.this_node) return "it runs the control process (Slurm's batch step), which stays to the job's end";
  std::vector<std::string> keep;
  for (const auto& h : held_)
    if (std::find(nodes.begin(), nodes.end(), h) == nodes.end()) keep.push_back(h);
  if (keep.empty()) return "the job would hold no node";
  std::string list;
  for (const auto& k : keep) list += (list.empty() ? "" : ",") + k;
  const auto out = run_tool({"scontrol", "update", "JobId=" + alloc_.job_id, "NodeList=" + list});
  if (out.code != 0) return "scontrol update JobId=" + alloc_.job_id + " NodeList=" + list + " failed: " + out.text;
  held_ = keep;
  return {};
}

}  // namespace msomni::apps
