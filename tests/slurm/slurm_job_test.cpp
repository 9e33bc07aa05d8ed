// msomni-run inside a real Slurm allocation: a Slurm cluster started here (munged, slurmctld,
// one slurmd per node on this machine), the shipped configs/slurm/train.sbatch submitted with
// sbatch. The job's agents start with srun on the allocated nodes and train across them;
// topology/tree keeps a data-parallel group under one switch; a node set DOWN mid-run is
// recovered like a dead rank, on the nodes left; `scancel --signal=TERM` gives a final
// checkpoint, the script requeues the job and it resumes with no step lost or repeated.
#include "core/child_process.hpp"
#include "support/json_lines.hpp"
#include "support/job_probe.hpp"
#include "support/process_runner.hpp"
#include "support/slurm_cluster.hpp"
#include "support/test_skip.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using msomni::testing::json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::slurm_cluster;

namespace {

namespace fs = std::filesystem;

const std::string source_root = MSOMNI_SOURCE_DIR;

// sbatch of the shipped script with `sbatch_flags`, the quickstart's model in `run` and the
// msomni-run options `extra`; the job id.
std::string submit(const fs::path& dir, const std::string& sbatch_flags, const std::string& extra, int steps) {
  const auto cmd = "cd " + dir.string() + " && MSOMNI_RUN=" + std::string(MSOMNI_RUN_BINARY) +
                   " sbatch --parsable --output=" + (dir / "job-%j.out").string() + " " + sbatch_flags + " " +
                   source_root + "/configs/slurm/train.sbatch " + source_root +
                   "/configs/slurm/multinode.toml --run-dir " + (dir / "run").string() +
                   " --set health.preflight=off --set training.threads=1 --set training.steps=" +
                   std::to_string(steps) + " " + extra;
  const auto r = run_command(cmd);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  auto id = r.output;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id.substr(0, id.find(';'));
}

// JobState= of `scontrol show job`.
std::string job_state(const std::string& id) {
  const auto r = run_command("scontrol -o show job " + id);
  const auto at = r.output.find("JobState=");
  if (at == std::string::npos) return "";
  return r.output.substr(at + 9, r.output.find(' ', at) - at - 9);
}

// Until the job has ended (not pending, running, completing or requeued).
std::string wait_job_end(const std::string& id, std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  std::string s;
  while (std::chrono::steady_clock::now() < deadline) {
    s = job_state(id);
    if (s == "COMPLETED" || s == "FAILED" || s == "CANCELLED" || s == "TIMEOUT" || s == "NODE_FAIL" ||
        s == "OUT_OF_MEMORY")
      return s;
    std::this_thread::sleep_for(500ms);
  }
  return "still " + s;
}

// A job that shows FAILED or CANCELLED and still does 10 s later: a requeue from its own
// script races with the script's exit, so the state passes through FAILED on the way back
// to PENDING.
bool ended_for_good(const std::string& id, const std::string& state) {
  if (state != "FAILED" && state != "CANCELLED") return false;
  std::this_thread::sleep_for(10s);
  return job_state(id) == state;
}

std::vector<json> events(const fs::path& dir) {
  const auto p = dir / "run" / "events.jsonl";
  return fs::exists(p) ? read_json_lines(p) : std::vector<json>{};
}

std::vector<json> of_kind(const std::vector<json>& ev, const std::string& kind) {
  std::vector<json> out;
  for (const auto& e : ev)
    if (e.value("kind", "") == kind) out.push_back(e);
  return out;
}

// Node -> ranks spawned there, from the rank_spawn events.
std::map<std::string, int> spawned_on(const std::vector<json>& ev) {
  std::map<std::string, int> out;
  for (const auto& e : of_kind(ev, "rank_spawn")) ++out[e.value("node", "")];
  return out;
}

std::string job_output(const fs::path& dir, const std::string& id) { return read_text(dir / ("job-" + id + ".out")); }

// The whole story of a failed case: the job's output, its events, Slurm's logs.
std::string story(const slurm_cluster& c, const fs::path& dir, const std::string& id) {
  return "---- job output\n" + job_output(dir, id) + "---- events.jsonl\n" + read_text(dir / "run" / "events.jsonl") +
         "---- slurm-agents.log\n" + read_text(dir / "run" / "logs" / "slurm-agents.log") + c.logs();
}

// Whether the job's metrics.jsonl has at least `lines` lines within `within`.
bool wait_metric_lines(const fs::path& dir, size_t lines, std::chrono::seconds within = 120s) {
  return msomni::testing::wait_for([&] {
    const auto p = dir / "run" / "metrics.jsonl";
    return fs::exists(p) && read_json_lines(p).size() >= lines;
  }, within);
}

// After a stop that requeues the job: until its second run has resumed and completed (or it
// ended for good, or 360 s). Slurm holds a requeued job back for a while (its BeginTime); that
// wait is Slurm's, not the resume's, so the job is let start early, once `may_start` says its
// nodes are free. Not at once: a slurmd refuses a job credential issued in the same second as
// it revoked the job's previous one ("Job credential revoked", and the job ends FAILED), so the
// start waits 3 s after the job is seen pending. Returns the last state; `resumed` says
// whether a resume was journaled.
std::string wait_requeued_run(const std::string& id, const fs::path& dir, bool& resumed,
                              const std::function<bool()>& may_start = [] { return true; }) {
  resumed = false;
  bool hurried = false;
  const auto deadline = std::chrono::steady_clock::now() + 360s;
  std::optional<std::chrono::steady_clock::time_point> pending_since;
  std::string state;
  while (std::chrono::steady_clock::now() < deadline) {
    state = job_state(id);
    if (state == "PENDING" && !pending_since) pending_since = std::chrono::steady_clock::now();
    if (state == "PENDING" && !hurried && std::chrono::steady_clock::now() - *pending_since >= 3s && may_start()) {
      MESSAGE("requeued: " << run_command("scontrol -o show job " + id).output.substr(0, 400));
      hurried = run_command("scontrol update JobId=" + id + " StartTime=now").exit_code == 0;
    }
    resumed = !of_kind(events(dir), "resume").empty();
    if (resumed && state == "COMPLETED") break;
    if (ended_for_good(id, state)) break;
    std::this_thread::sleep_for(500ms);
  }
  return state;
}

// How often each step has a metrics line, across every run of the job.
std::map<uint64_t, int> step_counts(const fs::path& dir) {
  std::map<uint64_t, int> seen;
  for (const auto& m : read_json_lines(dir / "run" / "metrics.jsonl"))
    if (m.contains("step")) ++seen[m["step"].get<uint64_t>()];
  return seen;
}

// The steps of 1..steps without exactly one line in `seen`.
std::vector<uint64_t> steps_not_once(std::map<uint64_t, int> seen, int steps) {
  std::vector<uint64_t> wrong;
  for (uint64_t s = 1; s <= static_cast<uint64_t>(steps); ++s)
    if (seen[s] != 1) wrong.push_back(s);
  return wrong;
}

// The job's events, one line each, shown with -s (doctest's --success) and on failure.
void show_events(const std::vector<json>& ev) {
  for (const auto& e : ev)
    if (e.value("kind", "") != "rank_step_slow")
      MESSAGE(e.value("kind", "") << " " << e.value("node", "") << " step " << e.value("step", 0) << ": "
                                  << e.value("reason", "").substr(0, 140));
}

#define SLURM_OR_SKIP()                                                     \
  do {                                                                      \
    if (const auto why = slurm_cluster::unavailable(); !why.empty()) {     \
      MESSAGE("Slurm test skipped: " << why);                               \
      MSOMNI_SKIP_TEST("no Slurm cluster can run here: " + why);            \
    }                                                                       \
  } while (0)

}  // namespace

TEST_CASE("slurm: sbatch runs the job across both allocated nodes") {
  SLURM_OR_SKIP();
  slurm_cluster cluster({{"n1"}, {"n2"}});
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  const auto id = submit(dir.path(), "--nodes=2", "", 120);
  const auto state = wait_job_end(id, 240s);
  const auto ev = events(dir.path());
  INFO(story(cluster, dir.path(), id));
  CHECK(state == "COMPLETED");
  const auto on = spawned_on(ev);
  CHECK(on.size() == 2);
  CHECK(on.count("n1") == 1);
  CHECK(on.count("n2") == 1);
  CHECK(of_kind(ev, "agent_joined").size() == 2);
  CHECK(of_kind(ev, "slurm_agents").size() == 1);
  const auto summary = msomni::testing::parse_json(read_text(dir.path() / "run" / "summary.json"));
  CHECK(summary.dump().find("\"finished\"") != std::string::npos);
  CHECK(job_output(dir.path(), id).find("job finished") != std::string::npos);
}

TEST_CASE("slurm: with topology/tree a data-parallel group is placed under one switch") {
  SLURM_OR_SKIP();
  // n2 sits alone under s2; n1 and n3 share s1. By name alone the group would take n1 and n2.
  slurm_cluster cluster({{"n1"}, {"n2"}, {"n3"}}, {{"s1", {"n1", "n3"}}, {"s2", {"n2"}}});
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  const auto id = submit(dir.path(), "--nodes=3", "", 60);
  const auto state = wait_job_end(id, 240s);
  const auto ev = events(dir.path());
  INFO(story(cluster, dir.path(), id));
  CHECK(state == "COMPLETED");
  const auto on = spawned_on(ev);
  CHECK(on.size() == 2);
  CHECK(on.count("n1") == 1);
  CHECK(on.count("n3") == 1);
  CHECK(on.count("n2") == 0);
  bool told = false;
  for (const auto& e : of_kind(ev, "slurm_allocation"))
    told = told || e.value("reason", "").find("topology/tree") != std::string::npos;
  CHECK(told);
  for (const auto& e : of_kind(ev, "agent_joined"))
    if (e.value("node", "") == "n3") CHECK(e.value("reason", "").find("rack s1, switch top") != std::string::npos);
}

TEST_CASE("slurm: a node set DOWN mid-run is recovered like a dead rank, on the nodes left") {
  SLURM_OR_SKIP();
  slurm_cluster cluster({{"n1"}, {"n2"}, {"n3"}});
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  constexpr int steps = 900;
  const auto id = submit(dir.path(), "--nodes=3", "--set checkpoint.interval_steps=50", steps);
  // Both ranks stepping, then the node of one of them goes DOWN.
  std::string victim;
  const bool stepping = msomni::testing::wait_for([&] {
    const auto ev = events(dir.path());
    if (of_kind(ev, "rank_ready").size() < 2 || !fs::exists(dir.path() / "run" / "metrics.jsonl")) return false;
    if (read_json_lines(dir.path() / "run" / "metrics.jsonl").size() < 60) return false;
    for (const auto& [node, n] : spawned_on(ev))
      if (node != "n1") victim = node;  // not the batch node, where msomni-run itself runs
    return !victim.empty();
  }, 120s);
  REQUIRE_MESSAGE(stepping, story(cluster, dir.path(), id));
  const auto down = run_command("scontrol update NodeName=" + victim + " State=DOWN Reason=msomni-test");
  REQUIRE_MESSAGE(down.exit_code == 0, down.output);
  const auto state = wait_job_end(id, 300s);
  const auto ev = events(dir.path());
  INFO("node set DOWN: " << victim);
  show_events(ev);
  INFO(story(cluster, dir.path(), id));
  CHECK(state == "COMPLETED");
  bool agent_down = false;
  for (const auto& e : of_kind(ev, "agent_down")) agent_down = agent_down || e.value("node", "") == victim;
  CHECK(agent_down);
  CHECK(!of_kind(ev, "rank_down").empty());
  // The replacement started on a node still in the job, never on the one that went DOWN.
  const auto spawns = of_kind(ev, "rank_spawn");
  REQUIRE(spawns.size() >= 3);
  CHECK(spawns.back().value("node", "") != victim);
  const auto summary = read_text(dir.path() / "run" / "summary.json");
  CHECK(summary.find("\"finished\"") != std::string::npos);
}

TEST_CASE("slurm: scancel --signal=TERM gives a final checkpoint, and the requeued job resumes with no step lost or repeated") {
  SLURM_OR_SKIP();
  slurm_cluster cluster({{"n1"}, {"n2"}});
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  constexpr int steps = 600;
  const auto id = submit(dir.path(), "--nodes=2", "--set checkpoint.interval_steps=1000", steps);
  const bool stepping = wait_metric_lines(dir.path(), 80);
  REQUIRE_MESSAGE(stepping, story(cluster, dir.path(), id));
  // Slurm's way: SIGTERM to every process of the job's steps (here: the agents and ranks).
  const auto term = run_command("scancel --signal=TERM " + id);
  REQUIRE_MESSAGE(term.exit_code == 0, term.output);
  // The script requeues the job on exit 4 (preempted); it runs again and finishes.
  bool resumed = false;
  const auto state = wait_requeued_run(id, dir.path(), resumed);
  const auto ev = events(dir.path());
  INFO(story(cluster, dir.path(), id));
  show_events(ev);
  MESSAGE(job_output(dir.path(), id));
  CHECK(resumed);
  CHECK(state == "COMPLETED");
  bool stopped_for_term = false;
  for (const auto& e : of_kind(ev, "stop"))
    stopped_for_term = stopped_for_term || e.value("reason", "").find("SIGTERM at node") != std::string::npos;
  CHECK(stopped_for_term);
  CHECK(job_output(dir.path(), id).find("requeueing job " + id) != std::string::npos);
  // No step lost or repeated: every step 1..steps has exactly one metrics line, across both runs.
  const auto seen = step_counts(dir.path());
  const auto wrong = steps_not_once(seen, steps);
  CHECK(seen.size() == static_cast<size_t>(steps));
  CHECK_MESSAGE(wrong.empty(), wrong.size() << " steps missing or repeated, first " << (wrong.empty() ? 0 : wrong[0]));
  // The first run ended preempted, after a final checkpoint the second one started from.
  std::set<uint64_t> attempts;
  for (const auto& e : ev) attempts.insert(e.value("attempt", 0));
  CHECK(attempts.size() >= 2);
}

TEST_CASE("slurm: preemption with GraceTime gives a final checkpoint, and the requeued job resumes with no step lost or repeated") {
  SLURM_OR_SKIP();
  slurm_cluster cluster({{"n1"}, {"n2"}}, {}, 60);
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  constexpr int steps = 600;
  const auto id = submit(dir.path(), "--nodes=2", "--set checkpoint.interval_steps=1000", steps);
  const bool stepping = wait_metric_lines(dir.path(), 80);
  REQUIRE_MESSAGE(stepping, story(cluster, dir.path(), id));
  // A job of the higher partition wants both nodes: Slurm preempts ours.
  const auto high = run_command("sbatch --parsable -p high --nodes=2 --output=" + (dir.path() / "high-%j.out").string() +
                                " --wrap 'sleep 2'");
  REQUIRE_MESSAGE(high.exit_code == 0, high.output);
  // Ours waits while the high job holds the nodes, then runs again.
  bool resumed = false;
  const auto state = wait_requeued_run(id, dir.path(), resumed,
                                       [] { return run_command("squeue -h -p high -o %i").output.empty(); });
  const auto ev = events(dir.path());
  INFO(story(cluster, dir.path(), id));
  show_events(ev);
  MESSAGE(job_output(dir.path(), id));
  CHECK(resumed);
  CHECK(state == "COMPLETED");
  CHECK(!of_kind(ev, "job_stopped").empty());
  const auto wrong = steps_not_once(step_counts(dir.path()), steps);
  CHECK_MESSAGE(wrong.empty(), wrong.size() << " steps missing or repeated, first " << (wrong.empty() ? 0 : wrong[0]));
}

TEST_CASE("slurm: a node a scale-down empties is given back to Slurm with release_idle_nodes") {
  SLURM_OR_SKIP();
  slurm_cluster cluster({{"n1"}, {"n2"}});
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  const auto id = submit(dir.path(), "--nodes=2", "--set cluster.release_idle_nodes=true", 900);
  const bool stepping = wait_metric_lines(dir.path(), 60);
  REQUIRE_MESSAGE(stepping, story(cluster, dir.path(), id));
  const auto down = run_command(std::string(MSOMNI_CLI_BINARY) + " scale-down --run-dir " + (dir.path() / "run").string() +
                                " --replicas 1");
  REQUIRE_MESSAGE(down.exit_code == 0, down.output);
  // The rank that left ran on n2 (the leaver is the last of the ring), n1 runs msomni-run.
  const bool released = msomni::testing::wait_for([&] { return !of_kind(events(dir.path()), "node_released").empty(); }, 60s);
  const auto nodes_now = run_command("scontrol -o show job " + id).output;
  const auto state = wait_job_end(id, 240s);
  const auto ev = events(dir.path());
  INFO(story(cluster, dir.path(), id));
  REQUIRE(released);
  CHECK(of_kind(ev, "node_released")[0].value("node", "") == "n2");
  CHECK(of_kind(ev, "node_release_failed").empty());
  CHECK(nodes_now.find(" NodeList=n1 ") != std::string::npos);
  CHECK(nodes_now.find("NumNodes=1 ") != std::string::npos);
  CHECK(state == "COMPLETED");
  // The released node's agent ended with it: no recovery followed.
  CHECK(of_kind(ev, "recovery").empty());
  CHECK(read_text(dir.path() / "run" / "summary.json").find("\"finished\"") != std::string::npos);
}

TEST_CASE("slurm: scale-up places the new replicas on the allocation's free slots") {
  SLURM_OR_SKIP();
  // Four nodes of one slot each: two ranks start, the other two nodes wait in the allocation.
  slurm_cluster cluster({{"n1"}, {"n2"}, {"n3"}, {"n4"}});
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  const auto id = submit(dir.path(), "--nodes=4", "--set cluster.release_idle_nodes=false", 600);
  REQUIRE_MESSAGE(wait_metric_lines(dir.path(), 40), story(cluster, dir.path(), id));
  const auto before = spawned_on(events(dir.path()));
  const auto up = run_command(std::string(MSOMNI_CLI_BINARY) + " scale-up --run-dir " + (dir.path() / "run").string() +
                              " --replicas 4");
  REQUIRE_MESSAGE(up.exit_code == 0, up.output);
  const bool grown = msomni::testing::wait_for([&] { return !of_kind(events(dir.path()), "scale_up_done").empty(); }, 120s);
  const auto state = wait_job_end(id, 240s);
  const auto ev = events(dir.path());
  INFO(story(cluster, dir.path(), id));
  show_events(ev);
  CHECK(before.size() == 2);
  REQUIRE(grown);
  CHECK(state == "COMPLETED");
  // One rank on each of the four allocated nodes: the new ones went where the allocation had room.
  const auto after = spawned_on(ev);
  CHECK(after == std::map<std::string, int>{{"n1", 1}, {"n2", 1}, {"n3", 1}, {"n4", 1}});
  CHECK(of_kind(ev, "recovery").empty());
  CHECK(read_text(dir.path() / "run" / "summary.json").find("\"finished\"") != std::string::npos);
}

TEST_CASE("slurm: under msomni job and msomni-sched inside an allocation, a Slurm stop is reported as stopped and the requeued job resumes") {
  SLURM_OR_SKIP();
  slurm_cluster cluster({{"n1"}, {"n2"}});
  REQUIRE_MESSAGE(cluster.wait_ready(), cluster.logs());
  msomni::testing::temp_dir dir;
  const auto info = (dir.path() / "sched.info").string();
  msomni::child_process sched(MSOMNI_SCHED_BINARY, {"--gpus", "8", "--info-file", info});
  REQUIRE_MESSAGE(sched.read_until("msomni-sched: 8 GPUs", 20s), sched.log);
  // The batch script of docs/slurm.md's "Under msomni-sched": msomni job wraps msomni-run, and
  // a stop (exit 4) requeues the job, whose next run is the same msomni job, so it resumes.
  constexpr int steps = 600;
  const auto run = (dir.path() / "run").string();
  const auto script = dir.write("train-under-sched.sbatch",
      "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --no-kill\n#SBATCH --requeue\n"
      "#SBATCH --open-mode=append\n" + std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
      " --id train --class regular --gpus 2 --run-dir " + run + " -- " + MSOMNI_RUN_BINARY + " " + source_root +
      "/configs/slurm/multinode.toml --run-dir " + run + " --set health.preflight=off --set training.threads=1"
      " --set checkpoint.interval_steps=1000 --set training.steps=" + std::to_string(steps) +
      "\nrc=$?\nif [ \"$rc\" -eq 4 ]; then scontrol requeue \"$SLURM_JOB_ID\"; fi\nexit \"$rc\"\n");
  const auto sub = run_command("cd " + dir.path().string() + " && sbatch --parsable --output=" +
                               (dir.path() / "job-%j.out").string() + " " + script);
  REQUIRE_MESSAGE(sub.exit_code == 0, sub.output);
  const auto id = sub.output.substr(0, sub.output.find_first_of(";\n"));
  REQUIRE_MESSAGE(wait_metric_lines(dir.path(), 80), story(cluster, dir.path(), id));
  // While it runs, msomni-sched holds its GPUs for it.
  const auto running = msomni::testing::parse_json(
      // stdout alone: a UCX warning on stderr at the CLI's exit is no part of the answer.
      run_command("(" + std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info + " 2>/dev/null)")
          .output);
  CHECK(running.dump().find("\"train\"") != std::string::npos);
  const auto term = run_command("scancel --signal=TERM " + id);
  REQUIRE_MESSAGE(term.exit_code == 0, term.output);
  bool resumed = false;
  const auto state = wait_requeued_run(id, dir.path(), resumed);
  const auto out = job_output(dir.path(), id);
  INFO(story(cluster, dir.path(), id));
  INFO("---- msomni-sched\n" << sched.log);
  CHECK(resumed);
  CHECK(state == "COMPLETED");
  // msomni job told the scheduler of the stop with its checkpoint step, and the requeued run
  // resumed from that step under the same id.
  const std::string stopped_at = "msomni job train: stopped (not finished): resumable from checkpoint step ";
  const auto at = out.find(stopped_at);
  REQUIRE(at != std::string::npos);
  const auto step = std::stoull(out.substr(at + stopped_at.size()));
  CHECK(out.find("msomni job train: resumes from checkpoint step " + std::to_string(step)) != std::string::npos);
  CHECK(out.find("msomni job train: finished") != std::string::npos);
  const auto wrong = steps_not_once(step_counts(dir.path()), steps);
  CHECK_MESSAGE(wrong.empty(), wrong.size() << " steps missing or repeated, first " << (wrong.empty() ? 0 : wrong[0]));
  // The scheduler's record: finished with exit 0, nothing left stopped, its GPUs free again.
  const auto after = msomni::testing::parse_json(
      // stdout alone: a UCX warning on stderr at the CLI's exit is no part of the answer.
      run_command("(" + std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info + " 2>/dev/null)")
          .output);
  CHECK(after.at("stopped").empty());
  REQUIRE(after.at("ended").size() == 1);
  CHECK(after.at("ended")[0].at("job") == "train");
  CHECK(after.at("ended")[0].at("end") == "finished");
  CHECK(after.at("jobs").empty());
  ::kill(sched.pid(), SIGTERM);
  CHECK(sched.wait(10s) == 0);
}

TEST_CASE("slurm: cluster.slurm = require refuses to start outside an allocation") {
  const auto r = run_command("env -u SLURM_JOB_ID " + std::string(MSOMNI_RUN_BINARY) + " " + source_root +
                             "/configs/slurm/multinode.toml --dry-run");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("cluster.slurm = \"require\"") != std::string::npos);
  CHECK(r.output.find("nothing was started") != std::string::npos);
}
