// Control failover with real processes: a real etcd server, two msomni-run processes on one
// run directory ([control] store), the quickstart job. The leader SIGKILLed mid-run: its ranks
// train on, the standby takes over and adopts them as they run, and every step is recorded
// once; with node agents (a multi-node job) the agents keep their ranks and join the standby,
// after a SIGKILL as after a deposition.
// Leaders killed around elastic changes keep one epoch history. The leader SIGSTOPped
// past its lease: the standby is elected but starts only once the old leader let go of the run
// directory; the old leader, continued, finds itself deposed, leaves its ranks to the next
// leader and exits 6, and the store's history shows nothing of its term committed after the
// next term began.
#include "support/etcd_servers.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/orphan_reaper.hpp"
#include "support/process_runner.hpp"

#include "control_keys.hpp"
#include "store/etcd_client.hpp"

#include "core/process.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;
using msomni::testing::json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::temp_dir;
using msomni::testing::wait_for;

namespace {

constexpr int steps = 900;

struct control_process {
  process::child child;
  std::string log_path;
  std::string log() const { return read_text(log_path); }
};

control_process start_control(const temp_dir& dir, const std::string& name, const std::string& store,
                              const std::string& job, int job_steps = steps,
                              const std::string& config = std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml") {
  process::spawn_options o;
  o.in = process::stream::null();
  const auto log = (dir.path() / (name + ".log")).string();
  o.out = process::stream::file(log);
  o.err = process::stream::same_as_stdout();
  o.parent_death_signal = SIGKILL;
  return {process::spawn(MSOMNI_RUN_BINARY,
                         {config, "--run-dir",
                          (dir.path() / "run").string(), "--set", "control.store=" + store, "--set",
                          "control.lease_ttl_s=3", "--set", "health.preflight=off", "--set",
                          "training.steps=" + std::to_string(job_steps), "--set", "checkpoint.interval_steps=20", "--set",
                          "job.name=" + job},
                         o),
          log};
}

// The quickstart job on two nodes of one slot each, node-a and node-b.
std::string two_node_config(const temp_dir& dir) {
  return dir.write("nodes.toml", read_text(std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml") +
                                     "\n[[cluster.nodes]]\nname = \"node-a\"\nslots = 1\n"
                                     "[[cluster.nodes]]\nname = \"node-b\"\nslots = 1\n");
}

// An msomni-agent for node-a and node-b, joined to the leader control.json names now.
std::map<std::string, control_process> start_agents(const temp_dir& dir) {
  const auto control_json = dir.path() / "run" / "control.json";
  const auto address = json::parse(read_text(control_json))["address"].get<std::string>();
  std::map<std::string, control_process> agents;
  for (const std::string node : {"node-a", "node-b"}) {
    process::spawn_options o;
    o.in = process::stream::null();
    const auto log = (dir.path() / (node + ".log")).string();
    o.out = process::stream::file(log);
    o.err = process::stream::same_as_stdout();
    o.parent_death_signal = SIGKILL;
    agents.emplace(node, control_process{process::spawn(MSOMNI_AGENT_BINARY,
                                                        {"--join", address, "--token-file", control_json.string(), "--node",
                                                         node, "--heartbeat-s", "1", "--log-dir",
                                                         (dir.path() / ("logs-" + node)).string()},
                                                        o),
                                         log});
  }
  return agents;
}

std::vector<json> events_of(const temp_dir& dir) {
  const auto p = dir.path() / "run" / "events.jsonl";
  return std::filesystem::exists(p) ? read_json_lines(p) : std::vector<json>{};
}

std::vector<json> of_kind(const std::vector<json>& events, const std::string& kind) {
  std::vector<json> out;
  for (const auto& e : events)
    if (e.value("kind", "") == kind) out.push_back(e);
  return out;
}

// Checkpoint events of steps in (after, up_to], by the step their text names.
size_t checkpoints_between(const std::vector<json>& events, size_t after, size_t up_to) {
  size_t n = 0;
  for (const auto& e : of_kind(events, "checkpoint")) {
    const auto text = e.value("reason", std::string());
    if (text.rfind("step ", 0) != 0) continue;
    const size_t step = std::stoul(text.substr(5));
    n += step > after && step <= up_to;
  }
  return n;
}

size_t metric_lines(const temp_dir& dir) {
  const auto p = dir.path() / "run" / "metrics.jsonl";
  return std::filesystem::exists(p) ? read_json_lines(p).size() : 0;
}

// The effective curve: a line of a later attempt replaces every earlier line of its step or a
// later one. Returns how often each step is on it (each exactly once when nothing is lost).
std::map<uint64_t, int> effective_steps(const temp_dir& dir) {
  std::map<uint64_t, std::pair<uint64_t, int>> curve;  // step -> (attempt, count)
  for (const auto& m : read_json_lines(dir.path() / "run" / "metrics.jsonl")) {
    if (!m.contains("step")) continue;
    const uint64_t step = m["step"], attempt = m["attempt"];
    for (auto it = curve.lower_bound(step); it != curve.end();)
      it = it->second.first < attempt ? curve.erase(it) : std::next(it);
    auto& c = curve[step];
    c.first = attempt;
    ++c.second;
  }
  std::map<uint64_t, int> out;
  for (const auto& [step, c] : curve) out[step] = c.second;
  return out;
}

void check_every_step_once(const temp_dir& dir, int job_steps = steps) {
  const auto curve = effective_steps(dir);
  CHECK(curve.size() == static_cast<size_t>(job_steps));
  std::vector<uint64_t> wrong;
  for (uint64_t s = 1; s <= static_cast<uint64_t>(job_steps); ++s)
    if (!curve.count(s) || curve.at(s) != 1) wrong.push_back(s);
  CHECK_MESSAGE(wrong.empty(), wrong.size() << " steps missing or repeated on the effective curve, first " << (wrong.empty() ? 0 : wrong[0]));
}

bool pid_alive(int64_t pid) { return testing::running(pid); }

// Metrics lines of one attempt of the job.
size_t metric_lines_of_attempt(const temp_dir& dir, uint64_t attempt) {
  const auto p = dir.path() / "run" / "metrics.jsonl";
  size_t n = 0;
  if (std::filesystem::exists(p))
    for (const auto& m : read_json_lines(p)) n += m.value("attempt", uint64_t{0}) == attempt ? 1 : 0;
  return n;
}

// The attempt a takeover event started (the attempt_started that follows it).
uint64_t attempt_after(const std::vector<json>& events, const json& takeover) {
  bool seen = false;
  for (const auto& e : events) {
    if (e == takeover) seen = true;
    else if (seen && e.value("kind", "") == "attempt_started") return e.value("attempt", uint64_t{0});
  }
  return 0;
}

// The job's replicas as the store had them before `term` began: those of the last event
// committed by an earlier term that carries them (a completed resize, an adoption, the
// replicas a takeover started on); 0: none.
int64_t committed_replicas_before(store::etcd_client& admin, const control::job_keys& keys, int64_t term) {
  int64_t replicas = 0;
  int64_t at = 0;
  for (const auto& kv : admin.get_prefix(keys.events())) {
    const auto e = json::parse(kv.value);
    if (e.value("replicas", int64_t{0}) <= 0 || e.value("term", int64_t{0}) >= term) continue;
    if (kv.mod_revision >= at) at = kv.mod_revision, replicas = e.value("replicas", int64_t{0});
  }
  return replicas;
}

}  // namespace

TEST_CASE("control failover: the leader SIGKILLed mid-run, its ranks train on, the standby adopts them and every step is recorded once") {
  testing::etcd_servers etcd;
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  testing::orphan_reaper reaper;  // the ranks outlive their leader: their end is ours to reap
  auto leader = start_control(dir, "leader", etcd.url(), "failover-kill");
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_elected").empty(); }, 120s), leader.log());
  auto standby = start_control(dir, "standby", etcd.url(), "failover-kill");
  REQUIRE_MESSAGE(wait_for([&] { return standby.log().find("standby: ") != std::string::npos; }, 60s), standby.log());
  // Past a committed checkpoint, well before the end.
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "checkpoint").empty() && metric_lines(dir) >= 50; }, 180s),
                  leader.log());
  REQUIRE_FALSE(leader.child.poll().has_value());
  // msomni status shows the control plane: the leader, its lease and the waiting standby.
  const auto status_json = [&] {
    const auto r = testing::run_command(std::string(MSOMNI_CLI_BINARY) + " status --json --run-dir " +
                                        (dir.path() / "run").string() + " 2>/dev/null");
    return json::parse(r.output, nullptr, false);
  };
  const auto before = status_json();
  REQUIRE_MESSAGE(before.contains("control_plane"), before.dump());
  const auto& plane = before["control_plane"];
  CHECK(plane["leader"]["id"] == of_kind(events_of(dir), "control_elected")[0]["leader"]);
  CHECK(plane["lease_left_s"].get<int64_t>() > 0);
  CHECK(plane["standbys"].size() == 1);
  CHECK(plane["store"][0]["up"] == true);
  const auto ranks_of_leader = of_kind(events_of(dir), "rank_ready");
  REQUIRE(ranks_of_leader.size() == 2);
  const auto killed_at = std::chrono::steady_clock::now();
  leader.child.signal(SIGKILL);
  leader.child.wait();
  const auto recorded_at_kill = metric_lines(dir);
  // The ranks outlive it and train on.
  for (const auto& r : ranks_of_leader) CHECK(pid_alive(r.value("pid", int64_t{0})));
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_takeover").empty(); }, 60s), standby.log());
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "ranks_adopted").empty(); }, 60s), standby.log());
  MESSAGE("the standby adopted the ranks "
          << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at).count()
          << " ms after the leader's SIGKILL (lease 3 s)");
  // The CLI follows the new leader (its control.json) and the store names it.
  REQUIRE(wait_for([&] { return status_json().contains("control_plane"); }, 60s));
  const auto after = status_json()["control_plane"];
  CHECK(after["leader"]["id"] == of_kind(events_of(dir), "control_takeover")[0]["leader"]);
  CHECK(after["standbys"].empty());
  const auto status = standby.child.wait_for(300s);
  REQUIRE_MESSAGE(status.has_value(), standby.log());
  CHECK_MESSAGE(status->shell_code() == 0, standby.log());

  const auto events = events_of(dir);
  const auto elected = of_kind(events, "control_elected");
  const auto takeover = of_kind(events, "control_takeover");
  const auto adopted = of_kind(events, "ranks_adopted");
  REQUIRE(elected.size() == 1);
  REQUIRE(takeover.size() == 1);
  REQUIRE(adopted.size() == 1);
  CHECK(takeover[0]["previous_term"] == elected[0]["term"]);
  CHECK(takeover[0]["term"].get<int64_t>() > elected[0]["term"].get<int64_t>());
  CHECK(takeover[0]["previous_leader"] == elected[0]["leader"]);
  CHECK(takeover[0]["previous_recoveries"] == 0);  // no rank was lost before the takeover
  CHECK(adopted[0]["adopted"] == 2);
  // They stepped while the job had no leader: adopted past the last step recorded at the kill.
  CHECK(adopted[0]["adopted_step"].get<size_t>() > recorded_at_kill);
  // Nothing was restarted: the same two ranks, no new rank, no rollback, one epoch.
  CHECK(of_kind(events, "rank_ready").size() == 2);
  CHECK(of_kind(events, "rank_spawn").size() == 2);
  CHECK(of_kind(events, "rank_down").empty());
  CHECK(adopted[0]["adopted_epoch"] == 1);
  CHECK(of_kind(events, "job_finished").size() == 1);
  // The checkpoints they committed while no leader existed were reported to the one that
  // adopted them, and journaled.
  CHECK(checkpoints_between(events, recorded_at_kill, adopted[0]["adopted_step"].get<size_t>()) > 0);
  // Every step once in metrics.jsonl itself, not only on the effective curve.
  std::map<uint64_t, int> lines;
  std::vector<double> step_ms;
  for (const auto& m : read_json_lines(dir.path() / "run" / "metrics.jsonl"))
    if (m.contains("step")) ++lines[m["step"].get<uint64_t>()], step_ms.push_back(m.value("step_time_ms", 0.0));
  CHECK(lines.size() == static_cast<size_t>(steps));
  int repeated = 0;
  for (const auto& [step, n] : lines) repeated += n != 1;
  CHECK(repeated == 0);
  check_every_step_once(dir);
  // Step times across the failover, as the ranks measured them (reported, not judged here).
  if (step_ms.size() > recorded_at_kill + 40) {
    auto around = std::vector<double>(step_ms.begin() + static_cast<long>(recorded_at_kill) - 20,
                                      step_ms.begin() + static_cast<long>(recorded_at_kill) + 40);
    auto all = step_ms;
    std::sort(all.begin(), all.end());
    MESSAGE("step time across the failover: max " << *std::max_element(around.begin(), around.end())
                                                  << " ms against a median of " << all[all.size() / 2] << " ms");
  }
  // The adopted ranks said so in their logs, and are gone now.
  CHECK(read_text(dir.path() / "run" / "logs" / "rank-0.log").find("CONTROL adopted by the leader") != std::string::npos);
  for (const auto& r : ranks_of_leader) {
    const auto log = [&] { return read_text(dir.path() / "run" / "logs" / (r.value("rank", std::string()) + ".log")); };
    CHECK_MESSAGE(reaper.wait_gone(r.value("pid", int64_t{0}), 60s), log());
    // Reported, not judged: a rank whose teardown outlasted its bound says so in its log.
    if (log().find("still tearing down") != std::string::npos) MESSAGE("a rank's teardown hit its bound: " << log());
  }
  // The store: the job finished under the second term, whose events are in its log.
  store::etcd_client admin(etcd.endpoints(), 2000ms);
  const control::job_keys keys("failover-kill");
  const auto state = control::job_state::from_json(admin.get(keys.state())->value);
  CHECK(state.phase == "finished");
  CHECK(state.term == takeover[0]["term"].get<int64_t>());
  std::set<std::string> stored_kinds;
  for (const auto& kv : admin.get_prefix(keys.events())) stored_kinds.insert(json::parse(kv.value).value("kind", ""));
  CHECK(stored_kinds.count("control_takeover") == 1);
  CHECK(stored_kinds.count("ranks_adopted") == 1);
  CHECK(stored_kinds.count("job_finished") == 1);
  CHECK_FALSE(admin.get(keys.leader()).has_value());  // the last leader resigned
}

// A two-node job (node-a and node-b, one rank each) under a leader with its msomni-agents and a
// standby, run past a committed checkpoint and 50 recorded steps. The store, the run
// directory and every process are the fixture's.
struct two_node_job {
  testing::etcd_servers etcd;
  temp_dir dir;
  std::string config;
  std::optional<control_process> leader, standby;
  std::map<std::string, control_process> agents;
  std::vector<json> ranks_of_leader;  // their rank_ready events

  explicit two_node_job(const std::string& job) {
    REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
    ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
    config = two_node_config(dir);
    leader.emplace(start_control(dir, "leader", etcd.url(), job, steps, config));
    REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_elected").empty() &&
                                          std::filesystem::exists(dir.path() / "run" / "control.json"); }, 120s),
                    leader->log());
    agents = start_agents(dir);
    standby.emplace(start_control(dir, "standby", etcd.url(), job, steps, config));
    REQUIRE_MESSAGE(wait_for([&] { return standby->log().find("standby: ") != std::string::npos; }, 60s), standby->log());
    REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "checkpoint").empty() && metric_lines(dir) >= 50; }, 180s),
                    leader->log() << agents.at("node-a").log());
    ranks_of_leader = of_kind(events_of(dir), "rank_ready");
    REQUIRE(ranks_of_leader.size() == 2);
  }

  // The standby finishes the job (exit 0), and then the agents end (exit 0).
  void ends_under_the_standby() {
    const auto status = standby->child.wait_for(300s);
    REQUIRE_MESSAGE(status.has_value(), standby->log());
    CHECK_MESSAGE(status->shell_code() == 0, standby->log());
    for (auto& [node, agent] : agents) {
      const auto end = agent.child.wait_for(60s);
      REQUIRE_MESSAGE(end.has_value(), agent.log());
      CHECK_MESSAGE(end->shell_code() == 0, agent.log());
    }
  }
};

TEST_CASE("control failover: with node agents, the leader SIGKILLed mid-run: the agents keep their ranks training and join the standby, which adopts them with every step once") {
  two_node_job j("failover-nodes");
  j.leader->child.signal(SIGKILL);
  j.leader->child.wait();
  const auto recorded_at_kill = metric_lines(j.dir);
  for (const auto& r : j.ranks_of_leader) CHECK(pid_alive(r.value("pid", int64_t{0})));
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(j.dir), "ranks_adopted").empty(); }, 60s),
                  j.standby->log() << j.agents.at("node-a").log());
  // The agents stayed, with their ranks, and join the new leader (the ranks may find it first).
  for (auto& [node, agent] : j.agents) {
    CHECK_FALSE(agent.child.poll().has_value());
    CHECK_MESSAGE(wait_for([&] { return agent.log().find("joined the job's next leader") != std::string::npos; }, 30s),
                  agent.log());
  }
  // The adopted rank on node-b leaves in a scale-down: its agent, still its parent, stops it
  // and reports its end to the new leader.
  const auto down = testing::run_command(std::string(MSOMNI_CLI_BINARY) + " scale-down --replicas 1 --run-dir " +
                                         (j.dir.path() / "run").string());
  REQUIRE_MESSAGE(down.exit_code == 0, down.output);
  // The job ended under its leader: the agents end, with nothing left running.
  j.ends_under_the_standby();
  for (const auto& r : j.ranks_of_leader) CHECK_FALSE(pid_alive(r.value("pid", int64_t{0})));

  const auto events = events_of(j.dir);
  const auto adopted = of_kind(events, "ranks_adopted");
  REQUIRE(adopted.size() == 1);
  CHECK(adopted[0]["adopted"] == 2);
  CHECK(adopted[0]["adopted_step"].get<size_t>() > recorded_at_kill);
  CHECK(checkpoints_between(events, recorded_at_kill, adopted[0]["adopted_step"].get<size_t>()) > 0);
  // Nothing restarted: the leader's two ranks, on their two nodes, no rollback.
  CHECK(of_kind(events, "rank_spawn").size() == 2);
  CHECK(of_kind(events, "rank_down").empty());
  CHECK(of_kind(events, "recovery").empty());
  std::set<std::string> nodes;
  for (const auto& r : j.ranks_of_leader) nodes.insert(r.value("node", ""));
  CHECK(nodes == std::set<std::string>{"node-a", "node-b"});
  CHECK(of_kind(events, "agent_joined").size() == 4);  // each agent, once per leader
  CHECK(of_kind(events, "scale_down_done").size() == 1);
  CHECK(of_kind(events, "job_finished").size() == 1);
  check_every_step_once(j.dir);
}

TEST_CASE("control failover: an adopted rank that overruns a scale-down's grace period is stopped by its pid, and the job goes on") {
  constexpr int job_steps = 2000;
  testing::etcd_servers etcd;
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  testing::orphan_reaper reaper;
  auto leader = start_control(dir, "leader", etcd.url(), "failover-adopted-stop", job_steps);
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_elected").empty(); }, 120s), leader.log());
  auto standby = start_control(dir, "standby", etcd.url(), "failover-adopted-stop", job_steps);
  REQUIRE_MESSAGE(wait_for([&] { return standby.log().find("standby: ") != std::string::npos; }, 60s), standby.log());
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "checkpoint").empty() && metric_lines(dir) >= 50; }, 180s),
                  leader.log());
  leader.child.signal(SIGKILL);
  leader.child.wait();
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "ranks_adopted").empty(); }, 60s), standby.log());
  // The scale-down keeps the ring's first member: rank-1 leaves, and is frozen so it cannot.
  int64_t leaver = 0;
  for (const auto& e : of_kind(events_of(dir), "rank_ready"))
    if (e.value("rank", "") == "rank-1") leaver = e.value("pid", int64_t{0});
  REQUIRE(pid_alive(leaver));
  ::kill(static_cast<pid_t>(leaver), SIGSTOP);
  const auto down = testing::run_command(std::string(MSOMNI_CLI_BINARY) + " scale-down --replicas 1 --grace-period 2s --run-dir " +
                                         (dir.path() / "run").string());
  REQUIRE_MESSAGE(down.exit_code == 0, down.output);
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "grace_period_expired").empty(); }, 60s), standby.log());
  // Not the new leader's agent's child: stopped by its pid all the same.
  CHECK(reaper.wait_gone(leaver, 30s));
  const auto status = standby.child.wait_for(300s);
  REQUIRE_MESSAGE(status.has_value(), standby.log());
  CHECK_MESSAGE(status->shell_code() == 0, standby.log());
  CHECK(of_kind(events_of(dir), "job_finished").size() == 1);
  check_every_step_once(dir, job_steps);
}

TEST_CASE("control failover: leaders SIGKILLed in the middle of a scale-down, after one, and in the middle of a scale-up and of a recovery keep one epoch history and every step once") {
  constexpr int job_steps = 3000;
  testing::etcd_servers etcd;
  testing::orphan_reaper reaper;  // ranks outlive their leaders
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  const std::string job = "failover-elastic";
  const auto run = (dir.path() / "run").string();
  const auto cli = [&](const std::string& args) {
    return testing::run_command(std::string(MSOMNI_CLI_BINARY) + " " + args + " --run-dir " + run);
  };
  const auto count = [&](const std::string& kind) { return of_kind(events_of(dir), kind).size(); };
  std::vector<control_process> leaders;
  leaders.push_back(start_control(dir, "leader-1", etcd.url(), job, job_steps));
  REQUIRE_MESSAGE(wait_for([&] { return count("control_elected") == 1; }, 120s), leaders[0].log());
  // A standby for the next leader; a leader is killed only once one waits.
  const auto add_standby = [&](const std::string& name) {
    leaders.push_back(start_control(dir, name, etcd.url(), job, job_steps));
    auto& s = leaders.back();
    REQUIRE_MESSAGE(wait_for([&] { return s.log().find("standby: ") != std::string::npos; }, 60s), s.log());
  };
  const auto kill_leader = [&](size_t i) {
    REQUIRE_FALSE(leaders[i].child.poll().has_value());
    leaders[i].child.signal(SIGKILL);
    leaders[i].child.wait();
  };
  store::etcd_client admin(etcd.endpoints(), 2000ms);
  const control::job_keys keys(job);

  const auto takeover_at = [&](size_t i) { return of_kind(events_of(dir), "control_takeover")[i]; };
  // How the leader that took over (the i-th takeover) got its ranks: adopted or started anew.
  const auto settled = [&](size_t i) {
    return wait_for([&] {
      const auto events = events_of(dir);
      const auto attempt = attempt_after(events, of_kind(events, "control_takeover")[i]);  // once journaled
      for (const auto& e : events)
        if (e.value("attempt", uint64_t{0}) == attempt &&
            (e.value("kind", "") == "ranks_adopted" || e.value("kind", "") == "ranks_started"))
          return true;
      return false;
    }, 120s);
  };

  // 1. A scale-down requested, the leader killed as soon as it journals the request: its ranks
  // either complete the change at its barrier and are adopted at the new epoch, or never saw
  // it and are adopted at the old one (the change dropped), or are caught at the barrier and
  // refused (the job restarts on the replicas the store committed): never half applied.
  add_standby("standby-1");
  REQUIRE_MESSAGE(wait_for([&] { return metric_lines(dir) >= 30; }, 180s), leaders[0].log());
  const auto mid_down = cli("scale-down --replicas 1");
  REQUIRE_MESSAGE(mid_down.exit_code == 0, mid_down.output);
  REQUIRE_MESSAGE(wait_for([&] { return count("scale_down") >= 1; }, 60s), leaders[0].log());
  kill_leader(0);
  REQUIRE_MESSAGE(wait_for([&] { return count("control_takeover") == 1; }, 60s), leaders[1].log());
  REQUIRE_MESSAGE(settled(0), leaders[1].log());
  int64_t world = 0;
  {
    const auto st = json::parse(cli("status --json 2>/dev/null").output, nullptr, false);
    REQUIRE_MESSAGE(st.contains("ranks"), st.dump());
    world = static_cast<int64_t>(st["ranks"].size());
    const auto adopted = of_kind(events_of(dir), "ranks_adopted");
    MESSAGE("scale-down interrupted: the next leader runs " << world << " replica(s), "
                                                            << std::string(adopted.empty() ? "started anew" : "adopted"));
    CHECK((world == 1 || world == 2));
  }

  // 2. A completed scale-down, then the leader dies: the next one goes on with 1 replica.
  add_standby("standby-2");
  if (world == 2) {
    const auto down = cli("scale-down --replicas 1");
    REQUIRE_MESSAGE(down.exit_code == 0, down.output);
    REQUIRE_MESSAGE(wait_for([&] { return count("scale_down_done") >= 1; }, 120s), leaders[1].log());
  }
  const auto done_at = metric_lines(dir);
  REQUIRE(wait_for([&] { return metric_lines(dir) >= done_at + 10; }, 120s));
  kill_leader(1);
  REQUIRE_MESSAGE(wait_for([&] { return count("control_takeover") == 2; }, 60s), leaders[2].log());
  {
    const auto t = takeover_at(1);
    CHECK(t["replicas"] == 1);
    CHECK(committed_replicas_before(admin, keys, t["term"].get<int64_t>()) == 1);
  }

  // 3. A scale-up requested, the leader killed as soon as it journals the request: the next
  // one adopts the running ranks (the scale-up's new rank is told to leave) or starts on the
  // replicas of the last resize the store committed, whichever that was.
  add_standby("standby-3");
  const auto attempt3 = attempt_after(events_of(dir), takeover_at(1));
  REQUIRE(attempt3 > 0);
  REQUIRE_MESSAGE(wait_for([&] { return metric_lines_of_attempt(dir, attempt3) >= 20; }, 180s), leaders[2].log());
  const auto up = cli("scale-up --replicas 2");
  REQUIRE_MESSAGE(up.exit_code == 0, up.output);
  REQUIRE_MESSAGE(wait_for([&] { return count("scale_up") >= 1; }, 60s), leaders[2].log());
  kill_leader(2);
  REQUIRE_MESSAGE(wait_for([&] { return count("control_takeover") == 3; }, 60s), leaders[3].log());
  {
    const auto t = takeover_at(2);
    const auto committed = committed_replicas_before(admin, keys, t["term"].get<int64_t>());
    MESSAGE("scale-up interrupted: the store had committed " << committed << " replicas; the next leader starts on "
                                                              << t["replicas"]);
    CHECK(t["replicas"] == committed);
  }

  // 4. A rank killed, then its leader as soon as it journals the loss: the survivors wait for
  // a plan and are not adopted; the next leader goes on with the recoveries the store counted
  // and finishes the job.
  add_standby("standby-4");
  const auto attempt4 = attempt_after(events_of(dir), takeover_at(2));
  REQUIRE(attempt4 > 0);
  REQUIRE_MESSAGE(wait_for([&] { return metric_lines_of_attempt(dir, attempt4) >= 20; }, 180s), leaders[3].log());
  // A rank of the job as its leader sees it (started by it, or adopted from the one before).
  int64_t victim = 0;
  {
    const auto st = json::parse(cli("status --json 2>/dev/null").output, nullptr, false);
    REQUIRE_MESSAGE(st.contains("ranks"), st.dump());
    for (const auto& r : st["ranks"]) victim = r.value("pid", int64_t{0});
  }
  REQUIRE(pid_alive(victim));
  const auto downs = count("rank_down");
  ::kill(static_cast<pid_t>(victim), SIGKILL);
  REQUIRE_MESSAGE(wait_for([&] { return count("rank_down") > downs; }, 60s), leaders[3].log());
  kill_leader(3);
  REQUIRE_MESSAGE(wait_for([&] { return count("control_takeover") == 4; }, 60s), leaders[4].log());
  const auto status = leaders[4].child.wait_for(300s);
  REQUIRE_MESSAGE(status.has_value(), leaders[4].log());
  CHECK_MESSAGE(status->shell_code() == 0, leaders[4].log());

  // One epoch history: an attempt's events go on at the epoch the previous one reached (never
  // below), and its first plan (ranks_started) is a new epoch after all of those before it, or
  // it adopted the ranks at the very epoch the previous attempt left them in (ranks_adopted).
  const auto events = events_of(dir);
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> epochs;  // attempt -> (lowest, highest) epoch
  std::map<uint64_t, uint64_t> first_plan;                    // attempt -> epoch of its ranks_started
  std::map<uint64_t, uint64_t> adopted_at;                    // attempt -> epoch of its ranks_adopted
  for (const auto& e : events) {
    if (!e.contains("epoch") || e.value("epoch", uint64_t{0}) == 0) continue;
    const uint64_t a = e.value("attempt", uint64_t{0}), ep = e["epoch"];
    auto [it, fresh] = epochs.try_emplace(a, ep, ep);
    it->second.first = std::min(it->second.first, ep);
    it->second.second = std::max(it->second.second, ep);
    if (e.value("kind", "") == "ranks_started") first_plan.try_emplace(a, ep);
    if (e.value("kind", "") == "ranks_adopted" && !first_plan.count(a)) adopted_at.try_emplace(a, e.value("adopted_epoch", uint64_t{0}));
  }
  // One attempt per leader, and one more for each rollback that repeats steps within a
  // leader's run (as the recovery's may, depending on when its leader died).
  REQUIRE(epochs.size() >= 5);
  CHECK(first_plan.size() + adopted_at.size() == 5);
  MESSAGE(adopted_at.size() << " of the 4 takeovers adopted the running ranks");
  uint64_t highest = 0;
  for (const auto& [attempt, range] : epochs) {
    CAPTURE(attempt);
    CHECK(range.first >= highest);
    if (adopted_at.count(attempt)) CHECK(adopted_at.at(attempt) == highest);
    else if (first_plan.count(attempt)) CHECK(first_plan.at(attempt) > highest);
    highest = range.second;
  }
  const auto takeovers = of_kind(events, "control_takeover");
  REQUIRE(takeovers.size() == 4);
  for (size_t i = 1; i < takeovers.size(); ++i)
    CHECK(takeovers[i]["previous_epoch"].get<uint64_t>() >= takeovers[i - 1]["previous_epoch"].get<uint64_t>());
  CHECK(of_kind(events, "job_finished").size() == 1);
  check_every_step_once(dir, job_steps);
  const auto state = control::job_state::from_json(admin.get(keys.state())->value);
  CHECK(state.phase == "finished");
  CHECK(state.epoch == highest);
}

TEST_CASE("control failover: a leader stopped past its lease is deposed and fenced, and the standby starts once it let go") {
  testing::etcd_servers etcd;
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  testing::orphan_reaper reaper;  // ranks outlive their leader
  auto leader = start_control(dir, "leader", etcd.url(), "failover-stop");
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_elected").empty(); }, 120s), leader.log());
  auto standby = start_control(dir, "standby", etcd.url(), "failover-stop");
  REQUIRE_MESSAGE(wait_for([&] { return standby.log().find("standby: ") != std::string::npos; }, 60s), standby.log());
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "checkpoint").empty() && metric_lines(dir) >= 50; }, 180s),
                  leader.log());
  leader.child.signal(SIGSTOP);
  // The standby wins the election once the lease ran out, but the run directory is still the
  // stopped leader's.
  const bool elected = wait_for([&] { return standby.log().find("msomni-run: leading the job") != std::string::npos; }, 60s);
  const bool waits = elected && wait_for([&] { return standby.log().find("to let go of") != std::string::npos; }, 30s);
  CHECK(of_kind(events_of(dir), "control_takeover").empty());  // nothing started meanwhile
  leader.child.signal(SIGCONT);
  REQUIRE_MESSAGE(elected, standby.log());
  CHECK_MESSAGE(waits, standby.log());
  const auto old_status = leader.child.wait_for(120s);
  REQUIRE_MESSAGE(old_status.has_value(), leader.log());
  CHECK_MESSAGE(old_status->shell_code() == 6, leader.log());
  const auto status = standby.child.wait_for(300s);
  REQUIRE_MESSAGE(status.has_value(), standby.log());
  CHECK_MESSAGE(status->shell_code() == 0, standby.log());

  const auto events = events_of(dir);
  const auto elected_events = of_kind(events, "control_elected");
  const auto takeover = of_kind(events, "control_takeover");
  REQUIRE(elected_events.size() == 1);
  REQUIRE(takeover.size() == 1);
  const int64_t old_term = elected_events[0]["term"], new_term = takeover[0]["term"];
  CHECK(new_term > old_term);
  check_every_step_once(dir);
  // No split brain: of the old term, nothing landed in the store at or after the revision the
  // new term began with; the old leader's own journal has events it could not commit.
  store::etcd_client admin(etcd.endpoints(), 2000ms);
  const control::job_keys keys("failover-stop");
  size_t old_in_store = 0, new_in_store = 0;
  for (const auto& kv : admin.get_prefix(keys.events())) {
    const auto line = json::parse(kv.value);
    if (line["term"] == old_term) {
      ++old_in_store;
      CHECK(kv.mod_revision < new_term);
    } else {
      CHECK(line["term"] == new_term);
      ++new_in_store;
    }
  }
  CHECK(old_in_store > 0);
  CHECK(new_in_store > 0);
  size_t old_in_journal = 0;
  for (const auto& e : events)
    if (e.value("attempt", 0) == elected_events[0].value("attempt", 0)) ++old_in_journal;
  CHECK(old_in_journal > old_in_store);  // its stop and end were journaled, not committed
  // Deposed, it told its ranks nothing more: they trained on for the next leader.
  const auto deposed = of_kind(events, "deposed");
  REQUIRE(deposed.size() == 1);
  CHECK(deposed[0]["attempt"] == elected_events[0]["attempt"]);
  CHECK(of_kind(events, "stop").empty());
  MESSAGE("after the deposition: " << of_kind(events, "ranks_adopted").size() << " adoption(s), "
                                   << of_kind(events, "adoption_window_closed").size() << " fresh start(s)");
}

TEST_CASE("control failover: with node agents, a leader stopped past its lease is deposed, and the agents keep their ranks and join the next leader") {
  two_node_job j("failover-nodes-stop");
  j.leader->child.signal(SIGSTOP);
  const bool elected = wait_for([&] { return j.standby->log().find("msomni-run: leading the job") != std::string::npos; }, 60s);
  j.leader->child.signal(SIGCONT);
  REQUIRE_MESSAGE(elected, j.standby->log());
  const auto old_status = j.leader->child.wait_for(120s);
  REQUIRE_MESSAGE(old_status.has_value(), j.leader->log());
  CHECK_MESSAGE(old_status->shell_code() == 6, j.leader->log());  // deposed
  // The deposed leader's end is no end of the job: the agents stay with their ranks.
  for (auto& [node, agent] : j.agents) CHECK_MESSAGE(!agent.child.poll().has_value(), agent.log());
  j.ends_under_the_standby();
  for (auto& [node, agent] : j.agents)
    CHECK_MESSAGE(agent.log().find("joined the job's next leader") != std::string::npos, agent.log());
  const auto events = events_of(j.dir);
  CHECK(of_kind(events, "deposed").size() == 1);
  CHECK(of_kind(events, "control_takeover").size() == 1);
  CHECK(of_kind(events, "job_finished").size() == 1);
  // Adopted, or (when the ranks were caught at a barrier) started anew on the same agents.
  const bool adopted = of_kind(events, "ranks_adopted").size() == 1;
  CHECK((adopted || of_kind(events, "adoption_window_closed").size() == 1));
  if (adopted) CHECK(of_kind(events, "rank_spawn").size() == 2);
  check_every_step_once(j.dir);
  for (const auto& r : j.ranks_of_leader) CHECK_FALSE(pid_alive(r.value("pid", int64_t{0})));
  MESSAGE("after the deposition with node agents: " << std::string(adopted ? "the ranks were adopted" : "a fresh start"));
}

TEST_CASE("control failover: a 3-member store losing a member mid-run does not touch the job") {
  testing::etcd_servers etcd(3);
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  auto leader = start_control(dir, "leader", etcd.url(), "failover-member");
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_elected").empty(); }, 120s), leader.log());
  auto standby = start_control(dir, "standby", etcd.url(), "failover-member");
  REQUIRE_MESSAGE(wait_for([&] { return standby.log().find("standby: ") != std::string::npos; }, 60s), standby.log());
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "checkpoint").empty() && metric_lines(dir) >= 50; }, 180s),
                  leader.log());
  // The member every client asks first goes away (the raft leader or not: the others elect).
  etcd.stop(0);
  const auto stopped_at = metric_lines(dir);
  const auto status = leader.child.wait_for(300s);
  REQUIRE_MESSAGE(status.has_value(), leader.log());
  CHECK_MESSAGE(status->shell_code() == 0, leader.log());
  // The standby saw its leader finish the job and started nothing.
  const auto standby_status = standby.child.wait_for(60s);
  REQUIRE_MESSAGE(standby_status.has_value(), standby.log());
  CHECK_MESSAGE(standby_status->shell_code() == 0, standby.log());
  const auto events = events_of(dir);
  CHECK(of_kind(events, "control_takeover").empty());
  CHECK(of_kind(events, "stop").empty());
  CHECK(of_kind(events, "attempt_started").size() == 1);  // one attempt: nothing restarted
  CHECK(of_kind(events, "job_finished").size() == 1);
  CHECK(metric_lines(dir) > stopped_at);
  check_every_step_once(dir);
  // The two members left hold the job's end under the first and only term.
  store::etcd_client admin({etcd.endpoints()[1], etcd.endpoints()[2]}, 2000ms);
  const auto state = control::job_state::from_json(admin.get(control::job_keys("failover-member").state())->value);
  CHECK(state.phase == "finished");
  CHECK(state.term == of_kind(events, "control_elected")[0]["term"].get<int64_t>());
}

TEST_CASE("msomni health-check: store.etcd passes on a healthy 3-member store, warns with one member down, fails without a quorum") {
  testing::etcd_servers etcd(3);
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  const auto check = [&](int& rc) {
    const auto r = testing::run_command(std::string(MSOMNI_CLI_BINARY) + " health-check " + MSOMNI_SOURCE_DIR +
                                        "/configs/quickstart.toml --json --run-dir " + (dir.path() / "run").string() +
                                        " --set control.store=" + etcd.url());
    rc = r.exit_code;
    // The report is the last line; msomni-health-peer and UCX may say things on stderr before it.
    const auto last = r.output.rfind("\n{");
    const auto doc = json::parse(last == std::string::npos ? r.output : r.output.substr(last + 1), nullptr, false);
    if (doc.is_object() && doc.contains("checks"))
      for (const auto& c : doc["checks"])
        if (c["id"] == "store.etcd") return c;
    return json{{"output", r.output}};
  };
  int rc = -1;
  auto c = check(rc);
  CHECK_MESSAGE(c["status"] == "pass", c.dump());
  CHECK(c["value"] == "3 of 3 members");
  etcd.stop(2);
  c = check(rc);
  CHECK_MESSAGE(c["status"] == "warn", c.dump());
  CHECK(rc == 0);
  etcd.stop(1);
  c = check(rc);
  CHECK_MESSAGE(c["status"] == "fail", c.dump());
  CHECK(rc == 1);
}

TEST_CASE("control failover: etcd stopped for longer than the lease: the leader is deposed saying why, both keep campaigning and one leads when etcd returns") {
  testing::etcd_servers etcd;
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  testing::orphan_reaper reaper;  // ranks outlive their leader
  const int job_steps = 3000;
  auto leader = start_control(dir, "leader", etcd.url(), "failover-outage", job_steps);
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_elected").empty(); }, 120s), leader.log());
  auto standby = start_control(dir, "standby", etcd.url(), "failover-outage", job_steps);
  REQUIRE_MESSAGE(wait_for([&] { return standby.log().find("standby: ") != std::string::npos; }, 60s), standby.log());
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "checkpoint").empty() && metric_lines(dir) >= 50; }, 180s),
                  leader.log());
  // The store is gone for 20 s: longer than the lease (3 s), and longer than 12 campaign
  // attempts one renewal interval apart, shorter than the ranks' follow limit (3 x 3 + 30 s).
  etcd.pause(0);
  std::this_thread::sleep_for(20s);
  etcd.resume(0);
  // The deposed leader stands again (the same command, a fresh process) beside the standby,
  // which keeps campaigning: the first to win leads. The other ends: the standby with the
  // job's exit code, the deposed leader at once with 6 when it finds the standby leading.
  const auto status = standby.child.wait_for(300s);
  REQUIRE_MESSAGE(status.has_value(), standby.log());
  CHECK_MESSAGE(status->shell_code() == 0, standby.log());
  const auto old_status = leader.child.wait_for(120s);
  REQUIRE_MESSAGE(old_status.has_value(), leader.log());
  const bool standby_led = standby.log().find("msomni-run: leading the job") != std::string::npos;
  CHECK_MESSAGE(old_status->shell_code() == (standby_led ? 6 : 0), leader.log());
  if (standby_led)
    CHECK_MESSAGE(leader.log().find("another control process leads the job now") != std::string::npos, leader.log());
  // It says the store did not answer, not that another leader took the job, and stood again.
  CHECK_MESSAGE(leader.log().find("deposed: no renewal of the lease was confirmed in time") != std::string::npos, leader.log());
  CHECK_MESSAGE(leader.log().find("standing for the job's leadership again") != std::string::npos, leader.log());
  const auto events = events_of(dir);
  REQUIRE(of_kind(events, "control_takeover").size() == 1);
  const auto deposed = of_kind(events, "deposed");
  REQUIRE(deposed.size() == 1);
  CHECK(deposed[0].value("reason", std::string()).find("no renewal of the lease") != std::string::npos);
  check_every_step_once(dir, job_steps);
}

TEST_CASE("control failover: etcd stopped for longer than the lease with no standby: the deposed leader stands again, leads when etcd returns and adopts its ranks") {
  testing::etcd_servers etcd;
  REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0));
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  testing::orphan_reaper reaper;  // ranks outlive their leader
  const int job_steps = 3000;
  auto leader = start_control(dir, "leader", etcd.url(), "outage-alone", job_steps);
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "control_elected").empty(); }, 120s), leader.log());
  REQUIRE_MESSAGE(wait_for([&] { return !of_kind(events_of(dir), "checkpoint").empty() && metric_lines(dir) >= 50; }, 180s),
                  leader.log());
  etcd.pause(0);
  std::this_thread::sleep_for(20s);
  etcd.resume(0);
  const auto status = leader.child.wait_for(300s);
  REQUIRE_MESSAGE(status.has_value(), leader.log());
  CHECK_MESSAGE(status->shell_code() == 0, leader.log());
  CHECK_MESSAGE(leader.log().find("standing for the job's leadership again") != std::string::npos, leader.log());
  const auto events = events_of(dir);
  CHECK(of_kind(events, "deposed").size() == 1);
  CHECK(of_kind(events, "control_takeover").size() == 1);
  CHECK(of_kind(events, "ranks_adopted").size() == 1);
  CHECK(of_kind(events, "job_finished").size() == 1);
  check_every_step_once(dir, job_steps);
}
