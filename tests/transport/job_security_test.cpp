// A real job's network exposure: every process of a default quickstart run (msomni-run and
// its ranks) listens on loopback only and holds no socket of its parent; a stranger that
// reaches the control port without the job's token cannot register a node (it is refused
// and journaled with its address), and neither can msomni-agent with a wrong token, while
// msomni-agent with the run's control.json joins and the job finishes.
#include "core/child_process.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::set<std::string> socket_inodes(pid_t pid) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const auto target = fs::read_symlink(e.path(), ec);
    const auto t = target.string();
    if (!ec && t.rfind("socket:[", 0) == 0) out.insert(t.substr(8, t.size() - 9));
  }
  return out;
}

// inode -> local address (hex, as /proc/net/tcp{,6} writes it) of every listening TCP socket.
std::map<std::string, std::string> tcp_listeners() {
  std::map<std::string, std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state == "0A") out[inode] = local;
    }
  }
  return out;
}

// 127.0.0.0/8 (stored little endian: the first octet is the last hex pair), ::1, or
// ::ffff:127.x.y.z.
bool is_loopback_hex(const std::string& local) {
  const auto addr = local.substr(0, local.find(':'));
  if (addr.size() == 8) return addr.substr(6, 2) == "7F";
  return addr == "00000000000000000000000001000000" || (addr.substr(0, 24) == "0000000000000000FFFF0000" &&
                                                         addr.substr(30, 2) == "7F");
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

std::string control_address(const fs::path& run_dir) {
  const auto control = nlohmann::json::parse(msomni::testing::read_text(run_dir / "control.json"), nullptr, false);
  return control.is_object() ? control.value("address", "") : "";
}

size_t lines_of(const fs::path& p) { return msomni::testing::read_json_lines(p).size(); }

}  // namespace

TEST_CASE("every process of a quickstart run listens on loopback only and inherits no socket") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml", "--set",
                                                "training.steps=100000", "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for([&] { return fs::exists(run_dir / "metrics.jsonl") && lines_of(run_dir / "metrics.jsonl") >= 3; }, 180s));
  std::vector<pid_t> ranks = children_of(job.pid());
  REQUIRE(ranks.size() == 2);
  const auto listeners = tcp_listeners();
  const auto control_sockets = socket_inodes(job.pid());
  size_t listening = 0;
  for (pid_t pid : std::vector<pid_t>{job.pid(), ranks[0], ranks[1]}) {
    CAPTURE(pid);
    size_t own = 0;
    for (const auto& inode : socket_inodes(pid)) {
      const auto it = listeners.find(inode);
      if (it == listeners.end()) continue;
      ++own;
      CAPTURE(it->second);
      CHECK(is_loopback_hex(it->second));
      if (pid != job.pid()) CHECK_MESSAGE(!control_sockets.count(inode), "a rank holds msomni-run's listening socket");
    }
    CHECK(own >= 1);  // its UCX listener at least: the checks above saw something
    listening += own;
  }
  MESSAGE(listening << " listening sockets, all on loopback");
  job.kill9();
  job.wait(10s);
}

TEST_CASE("a node without the job's token cannot join but msomni-agent with control.json can") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("job.toml",
                             "[job]\nname = \"auth\"\n"
                             "[model]\nname = \"fuyu-tiny\"\nd_model = 32\nn_layers = 1\nn_heads = 2\nd_ff = 64\n"
                             "image_size = 16\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
                             "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
                             "[training]\nglobal_batch = 4\nmicro_batch = 2\ngrad_accum = 2\nsteps = 10\nlr = 1e-3\nseed = 5\n"
                             "[elasticity]\nreplicas = 1\nmin_replicas = 1\nmax_replicas = 1\n"
                             "heartbeat_interval_s = 0.2\nheartbeat_misses = 5\n"
                             "[[cluster.nodes]]\nname = \"node-a\"\nslots = 1\n");
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for([&] { return !control_address(run_dir).empty(); }, 60s));
  const auto address = control_address(run_dir);

  {  // A stranger on the control port, no token: it would register a node with 8 slots.
    caf::actor_system_config caf_cfg;
    caf::actor_system sys{msomni::configure_process(caf_cfg, 1)};
    msomni::transport::ucx_node_options opt;
    opt.name = "agent-evil";
    msomni::transport::transport_hub hub(opt);
    msomni::transport::gateway gw(sys, hub);
    hub.node().connect(address);
    const bool up = hub.node().wait_up("control", 5s);
    CHECK_FALSE(up);
    if (up) {
      auto orchestrator = gw.remote_dynamic("control", "orchestrator");
      caf::scoped_actor self{sys};  // a sender, as msomni-agent's actor is: the orchestrator ignores anonymous hellos
      self->send(orchestrator, msomni::msg::agent_hello{"evil", "rack0", "switch0", 8, ::getpid()});
      std::this_thread::sleep_for(1s);
    }
  }
  {  // msomni-agent with a token that is not the job's.
    const auto wrong = dir.write("wrong-token", "0123456789abcdef0123456789abcdef\n");
    fs::permissions(wrong, fs::perms::owner_read | fs::perms::owner_write);
    msomni::child_process agent(MSOMNI_AGENT_BINARY, {"--join", address, "--node", "evil-2", "--slots", "8",
                                                      "--token-file", wrong, "--log-dir", (dir.path() / "evil").string()});
    CHECK(agent.wait(60s) == 1);
  }
  msomni::child_process agent(MSOMNI_AGENT_BINARY, {"--join", address, "--node", "node-a", "--heartbeat-s", "0.2",
                                                    "--token-file", (run_dir / "control.json").string(), "--log-dir",
                                                    (dir.path() / "node-a").string()});
  CHECK(job.wait(120s) == 0);
  CHECK(agent.wait(30s) == 0);
  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  const auto events = msomni::testing::read_json_lines(run_dir / "events.jsonl");
  CHECK_FALSE(msomni::testing::has_event(events, "agent_joined", "evil"));
  CHECK_FALSE(msomni::testing::has_reason_containing(events, "evil (rack"));
  CHECK(msomni::testing::has_reason_containing(events, "node-a (rack"));
  CHECK(msomni::testing::has_event(events, "peer_refused", "a connection from 127.0.0.1:"));
  CHECK(msomni::testing::has_event(events, "job_finished"));
}
