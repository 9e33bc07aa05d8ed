// msomni-run's pre-flight of a multi-node job, with real msomni-agent processes on loopback:
// every agent checks its own node when the control process asks, the nodes pair up for timed
// all-reduces, and preflight.json holds one verdict per node. An agent slowed by the test
// (SIGSTOP 19 ms of every 20, as a throttled node would be) is flagged as the straggler among
// three; an agent whose node cannot run the loopback check fails the start: exit 3, and no
// rank is ever spawned.
#include "core/child_process.hpp"
#include "support/process_runner.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

namespace fs = std::filesystem;
using msomni::child_process;
using msomni::testing::read_text;
using msomni::testing::temp_dir;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A one-rank job on synthetic images, with `nodes` [[cluster.nodes]] of one slot each.
std::string job_text(const std::vector<std::string>& nodes) {
  std::string t =
      "[job]\nname = \"multinode\"\n[model]\nd_model = 16\nn_heads = 2\nd_ff = 32\nmax_seq_len = 64\n"
      "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
      "[training]\nglobal_batch = 2\nmicro_batch = 2\nsteps = 4\nseed = 3\n"
      "[elasticity]\nreplicas = 1\nmin_replicas = 1\nmax_replicas = 1\nheartbeat_interval_s = 0.5\n";
  for (const auto& n : nodes) t += "[[cluster.nodes]]\nname = \"" + n + "\"\nslots = 1\n";
  return t;
}

// msomni-run on the job and one msomni-agent per node (each through `env` with its own
// variables); the agents join once control.json names the address.
struct multinode_job {
  temp_dir dir;
  fs::path run_dir = dir.path() / "run";
  std::unique_ptr<child_process> run;
  std::vector<std::unique_ptr<child_process>> agents;

  // `absent`: listed in the config, but no agent is started for them.
  multinode_job(const std::vector<std::string>& nodes, const std::map<std::string, std::string>& agent_env = {},
                const std::vector<std::string>& absent = {}) {
    auto listed = nodes;
    listed.insert(listed.end(), absent.begin(), absent.end());
    const auto cfg = dir.write("job.toml", job_text(listed));
    run = std::make_unique<child_process>(MSOMNI_RUN_BINARY, std::vector<std::string>{cfg, "--run-dir", run_dir.string()});
    for (int i = 0; i < 600 && !fs::exists(run_dir / "control.json"); ++i) std::this_thread::sleep_for(50ms);
    REQUIRE_MESSAGE(fs::exists(run_dir / "control.json"), run->log);
    const auto address = json::parse(read_text(run_dir / "control.json")).at("address").get<std::string>();
    for (const auto& n : nodes) {
      std::vector<std::string> args;
      if (const auto it = agent_env.find(n); it != agent_env.end()) args.push_back(it->second);
      args.insert(args.end(), {MSOMNI_AGENT_BINARY, "--join", address, "--token-file", (run_dir / "control.json").string(),
                               "--node", n, "--slots", "1", "--heartbeat-s", "0.5", "--log-dir", (dir.path() / n).string()});
      agents.push_back(std::make_unique<child_process>("/usr/bin/env", args));
    }
  }
  json preflight() const { return json::parse(read_text(run_dir / "preflight.json"), nullptr, false); }
  // Waits for msomni-run to exit with `code` and every agent to end with it; the report.
  json ended_with(int code) {
    CHECK_MESSAGE(run->wait(180s) == code, run->log);
    for (auto& a : agents) CHECK(a->wait(30s) == 0);
    auto r = preflight();
    REQUIRE_MESSAGE(r.is_object(), events());
    return r;
  }
  std::string events() const { return read_text(run_dir / "events.jsonl"); }
};

const json* check_of(const json& checks, const std::string& id) {
  for (const auto& c : checks)
    if (c.value("id", "") == id) return &c;
  return nullptr;
}

// Stops `pid` for 19 ms of every 20 until it goes out of scope (a node several times slower).
class throttle {
 public:
  explicit throttle(pid_t pid)
      : thread_([this, pid] {
          while (!done_) {
            ::kill(pid, SIGSTOP);
            std::this_thread::sleep_for(19ms);
            ::kill(pid, SIGCONT);
            std::this_thread::sleep_for(1ms);
          }
        }) {}
  ~throttle() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("multi-node pre-flight: two agents check their nodes, pair up, and the report has both") {
  multinode_job job({"node-a", "node-b"});
  const auto r = job.ended_with(0);
  CAPTURE(r.dump(1));
  REQUIRE(r.at("nodes").size() == 2);
  std::set<std::string> names;
  for (const auto& n : r.at("nodes")) {
    names.insert(n.at("node").get<std::string>());
    CHECK(n.at("verdict") != "fail");
    CHECK(n.at("checks").size() >= 16);  // the node's own checks, run on that node
    const auto* ports = check_of(n.at("checks"), "host.port.control");
    REQUIRE(ports);
    CHECK(ports->at("status") == "skipped");  // the control node's to check
  }
  CHECK(names == std::set<std::string>{"node-a", "node-b"});
  CHECK(r.at("job_verdict") != "fail");
  CHECK(r.contains("checks"));  // the control node's own report stays at the top
  const auto& multi = r.at("multinode").at("checks");
  REQUIRE(check_of(multi, "multinode.pairs"));
  CHECK(check_of(multi, "multinode.pairs")->at("status") == "pass");
  CHECK(check_of(multi, "multinode.allreduce.node-a")->at("status") == "pass");
  CHECK(std::stod(check_of(multi, "multinode.allreduce.node-b")->at("value").get<std::string>()) > 0);
  CHECK(check_of(multi, "multinode.straggler")->at("status") == "skipped");
  const auto events = job.events();
  CHECK(events.find("\"preflight_nodes\"") != std::string::npos);
  CHECK(events.find("\"job_finished\"") != std::string::npos);
  // The combined report's fields and the pairings' check ids are documented.
  const auto doc = read_text(fs::path(MSOMNI_SOURCE_DIR) / "docs" / "health_check.md");
  for (const char* field : {"nodes", "multinode", "job_verdict"}) CHECK(doc.find(std::string("`") + field + "`") != std::string::npos);
  for (const auto& c : multi) {
    const auto id = std::regex_replace(c.at("id").get<std::string>(), std::regex("^multinode\\.allreduce\\..*"), "multinode.allreduce.NAME");
    CHECK_MESSAGE(doc.find("`" + id + "`") != std::string::npos, id);
  }
}

TEST_CASE("multi-node pre-flight: with three agents, the throttled one is flagged as the straggler") {
  multinode_job job({"node-a", "node-b", "node-c"});
  // Slowed from the end of its own checks (the pairs start once the last node reported) until
  // the pairs are over: its all-reduces are slow, whichever node it pairs with.
  const auto seen = [&](const std::string& text) { return job.events().find(text) != std::string::npos; };
  for (int i = 0; i < 60000 && !seen("\"node\":\"node-c\"") && !seen("\"preflight_nodes\""); ++i)
    std::this_thread::sleep_for(1ms);
  {
    const throttle slow(job.agents[2]->pid());
    for (int i = 0; i < 1200 && !seen("\"preflight_nodes\""); ++i) std::this_thread::sleep_for(50ms);
  }
  const auto r = job.ended_with(0);
  CAPTURE(r.dump(1));
  CHECK(r.at("nodes").size() == 3);
  const auto& multi = r.at("multinode").at("checks");
  const auto* straggler = check_of(multi, "multinode.straggler");
  REQUIRE(straggler);
  CHECK(straggler->at("status") == "warn");
  CHECK(straggler->at("reason").get<std::string>().find("node-c (") != std::string::npos);
  CHECK(check_of(multi, "multinode.allreduce.node-c")->at("status") == "warn");
  CHECK(check_of(multi, "multinode.allreduce.node-a")->at("status") == "pass");
  CHECK(check_of(multi, "multinode.allreduce.node-b")->at("status") == "pass");
  CHECK(r.at("job_verdict") == "warn");  // a straggler warns: the job still starts
}

TEST_CASE("multi-node pre-flight: an agent whose node fails a check stops the start with exit 3, no rank spawned") {
  multinode_job job({"node-a", "node-b"}, {{"node-b", "MSOMNI_HEALTH_PEER=/nonexistent/msomni-health-peer"}});
  const auto r = job.ended_with(3);
  CAPTURE(r.dump(1));
  CHECK(r.at("job_verdict") == "fail");
  for (const auto& n : r.at("nodes")) {
    const auto* loopback = check_of(n.at("checks"), "comm.ucx.loopback");
    REQUIRE(loopback);
    CHECK(loopback->at("status") == (n.at("node") == "node-b" ? "fail" : "pass"));
  }
  const auto events = job.events();
  CHECK(events.find("\"rank_spawn\"") == std::string::npos);
  CHECK(events.find("pre-flight failed on an agent's node") != std::string::npos);
  CHECK(events.find("node-b: comm.ucx.loopback") != std::string::npos);
}

TEST_CASE("multi-node pre-flight: a listed node whose agent never joins is reported missing and the job starts on the others") {
  multinode_job job({"node-a", "node-b"}, {}, {"node-c"});
  const auto r = job.ended_with(0);
  CAPTURE(r.dump(1));
  CHECK(r.at("missing") == json::array({"node-c"}));
  REQUIRE(r.at("nodes").size() == 2);
  CHECK(r.at("multinode").at("checks").size() > 0);  // node-a and node-b paired without it
  CHECK(r.at("job_verdict") != "fail");
  const auto events = job.events();
  CHECK(events.find("\"node_missing\"") != std::string::npos);
  CHECK(events.find("\"job_finished\"") != std::string::npos);
  const auto doc = read_text(fs::path(MSOMNI_SOURCE_DIR) / "docs" / "health_check.md");
  CHECK(doc.find("`missing`") != std::string::npos);
  CHECK(doc.find("`node_missing`") != std::string::npos);
}
