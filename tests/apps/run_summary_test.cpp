// A run that explains itself, with real processes: summary.json and summary.txt after a run
// that finished (exit 0), one stopped by SIGINT (exit 5, with the step and the checkpoint to
// resume from), one preempted by SIGTERM (exit 4) and one that failed (exit 1); events.jsonl lines with their structured fields;
// `msomni status` on an ended run answering from its run directory; rank logs with a header
// per start and a time on every line.
#include "core/child_process.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::json;
using msomni::testing::parse_json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

std::string quickstart() { return std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml"; }

std::string cli(const std::string& args) { return std::string(MSOMNI_CLI_BINARY) + " " + args; }

// The quickstart on `dir`'s own cache (this process and its children).
void use_cache_of(const msomni::testing::temp_dir& dir) {
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
}

json summary_of(const fs::path& run_dir) { return parse_json(read_text(run_dir / "summary.json")); }

}  // namespace

TEST_CASE("a finished run leaves summary.json and summary.txt, structured events, and status answers from them") {
  msomni::testing::temp_dir dir;
  use_cache_of(dir);
  const auto run_dir = dir.path() / "run";
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --set training.steps=12 --run-dir " +
                             run_dir.string());
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("summary.txt") != std::string::npos);
  const auto s = summary_of(run_dir);
  CHECK(s.at("state") == "finished");
  CHECK(s.at("exit_code") == 0);
  CHECK(s.at("steps").at("done") == 12);
  CHECK(s.at("steps").at("total") == 12);
  CHECK(s.at("steps").at("recorded") == 12);
  CHECK(s.at("tokens_per_s_median").get<double>() > 0);
  CHECK(s.at("wall_s").get<double>() > 0);
  const double first = s.at("loss").at("first"), last = s.at("loss").at("last"), min = s.at("loss").at("min");
  CHECK(min <= last);
  CHECK(min <= first);
  CHECK(s.at("world_sizes") == json::array({2}));
  CHECK(s.at("checkpoints").at("committed").get<int>() >= 1);
  CHECK(s.at("checkpoints").at("last_step") == 12);
  CHECK(s.at("resume").at("step") == 12);
  CHECK(s.at("bad_samples").at("total") == 0);
  CHECK(fs::exists(run_dir / "checkpoints" / s.at("resume").at("checkpoint").get<std::string>()));
  const auto text = read_text(run_dir / "summary.txt");
  CHECK(text.find("state         finished (exit code 0)\n") == 0);
  CHECK(text.find("steps         12 / 12") != std::string::npos);
  // No temporary left behind by the atomic write.
  for (const auto& e : fs::directory_iterator(run_dir)) CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);

  // Every event line names its kind (and keeps "event"), the step and epoch; rank events the
  // rank and node.
  const auto events = read_json_lines(run_dir / "events.jsonl");
  REQUIRE_FALSE(events.empty());
  bool spawn_named = false, ready_named = false;
  for (const auto& e : events) {
    INFO(e.dump());
    CHECK(e.at("kind") == e.at("event"));
    CHECK(e.contains("attempt"));
    const auto kind = e.at("kind").get<std::string>();
    if (kind == "run_dir_lock" || kind == "attempt_started" || kind == "resume" || kind == "metrics" ||
        kind == "control_started" || kind == "peer_refused" || kind == "preflight")
      continue;  // written before the orchestrator has a step
    CHECK(e.contains("step"));
    CHECK(e.contains("epoch"));
    if (kind == "rank_spawn") spawn_named = e.value("rank", "").rfind("rank-", 0) == 0 && e.value("node", "") == "local";
    if (kind == "rank_ready") ready_named = e.value("rank", "").rfind("rank-", 0) == 0 && e.value("node", "") == "local";
  }
  CHECK(spawn_named);
  CHECK(ready_named);
  const auto finished = msomni::testing::events_named(events, "job_finished");
  REQUIRE(finished.size() == 1);
  CHECK(finished[0].at("step") == 12);

  // The run has ended: status answers from the run directory (no control process to wait for).
  const auto status = run_command(cli("status --run-dir " + run_dir.string()));
  CAPTURE(status.output);
  CHECK(status.exit_code == 0);
  CHECK(status.output.find("job finished (it has ended") == 0);
  CHECK(status.output.find("steps         12 / 12") != std::string::npos);
  const auto status_json = run_command(cli("status --json --run-dir " + run_dir.string()));
  CHECK(status_json.exit_code == 0);
  CHECK(parse_json(status_json.output) == s);
  const auto stop = run_command(cli("stop --run-dir " + run_dir.string()));
  CHECK(stop.exit_code == 1);
  CHECK(stop.output.find("the job has ended (finished at step 12/12") != std::string::npos);

  // Rank logs: a header per start and a UTC time on every line. A second run on the
  // directory appends its own header.
  const auto resumed = run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                                   " --set training.steps=14 --run-dir " + run_dir.string());
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  for (const char* rank : {"rank-0", "rank-1"}) {
    const auto log = read_text(run_dir / "logs" / (std::string(rank) + ".log"));
    CAPTURE(log);
    const std::regex header("^---- \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z msomni-rank started: pid \\d+, " +
                            std::string(rank) + " on node local, attempt (\\d+) ----$");
    const std::regex stamped("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z .*");
    std::vector<std::string> attempts;
    size_t lines = 0;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line); ++lines) {
      std::smatch m;
      if (std::regex_match(line, m, header)) attempts.push_back(m[1]);
      else CHECK_MESSAGE(std::regex_match(line, stamped), line);
    }
    CHECK(attempts == std::vector<std::string>{"1", "2"});
    CHECK(lines > 20);
    CHECK(log.rfind("---- ", 0) == 0);
    // Two clean runs: no error line from msomni or from UCX (a peer that left at the same
    // moment is not an error).
    CHECK(log.find(" ERROR ") == std::string::npos);
  }
  CHECK(resumed.output.find(" ERROR ") == std::string::npos);
}

TEST_CASE("a run stopped by SIGINT exits 5 and its summary names the step and checkpoint to resume from") {
  msomni::testing::temp_dir dir;
  use_cache_of(dir);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {quickstart(), "--set", "training.steps=100000", "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for(
      [&] { return fs::exists(run_dir / "metrics.jsonl") && read_json_lines(run_dir / "metrics.jsonl").size() >= 5; }, 120s));
  // The status of a running job has its sections.
  const auto live = run_command(cli("status --run-dir " + run_dir.string()));
  CAPTURE(live.output);
  CHECK(live.exit_code == 0);
  CHECK(live.output.find("\nranks:\n  rank-0  node local  pid ") != std::string::npos);
  CHECK(live.output.find("  step ") != std::string::npos);
  CHECK(live.output.find("\nagents:\n  local  rack ") != std::string::npos);
  const auto live_json = parse_json(run_command(cli("status --json --run-dir " + run_dir.string())).output);
  CHECK(live_json.at("ranks").size() == 2);
  CHECK(live_json.at("departed").empty());

  ::kill(job.pid(), SIGINT);
  CHECK(job.wait(120s) == 5);
  CAPTURE(job.log);
  const auto s = summary_of(run_dir);
  CHECK(s.at("state") == "stopped");
  CHECK(s.at("exit_code") == 5);
  const auto step = s.at("steps").at("done").get<uint64_t>();
  CHECK(step >= 5);
  CHECK(s.at("resume").at("step") == step);  // the stop's final checkpoint
  const auto checkpoint = s.at("resume").at("checkpoint").get<std::string>();
  CHECK(read_text(run_dir / "checkpoints" / "latest").find(checkpoint) != std::string::npos);
  CHECK(read_text(run_dir / "summary.txt").find("resume from   step " + std::to_string(step) + " (" + checkpoint + ")") !=
        std::string::npos);
  const auto status = run_command(cli("status --run-dir " + run_dir.string()));
  CHECK(status.exit_code == 0);
  CHECK(status.output.find("job stopped (it has ended") == 0);
}

TEST_CASE("a run ended by SIGTERM exits 4 and its summary says preempted, resumable like a stop") {
  msomni::testing::temp_dir dir;
  use_cache_of(dir);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {quickstart(), "--set", "training.steps=100000", "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for(
      [&] { return fs::exists(run_dir / "metrics.jsonl") && read_json_lines(run_dir / "metrics.jsonl").size() >= 3; }, 120s));
  ::kill(job.pid(), SIGTERM);
  CHECK(job.wait(120s) == 4);
  CAPTURE(job.log);
  const auto s = summary_of(run_dir);
  CHECK(s.at("state") == "preempted");
  CHECK(s.at("exit_code") == 4);
  CHECK(s.at("resume").at("step") == s.at("steps").at("done"));
  CHECK(read_text(run_dir / "summary.txt").find("state         preempted (exit code 4)\n") == 0);
  bool stop_named = false;
  for (const auto& e : read_json_lines(run_dir / "events.jsonl"))
    if (e.at("kind") == "stop" && e.at("reason").get<std::string>().rfind("SIGTERM (a preemption) received", 0) == 0)
      stop_named = true;
  CHECK(stop_named);
}

TEST_CASE("a run that fails exits 1 and its summary says failed with the reason") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write(
      "job.toml",
      "[job]\nname = \"diverging\"\n[model]\nname = \"bigram-diverging\"\nplugin = \"" + std::string(MSOMNI_TEST_PLUGIN) +
          "\"\nd_model = 16\n[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
          "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = 2\nsteps = 400\nlr = 1e-3\nseed = 5\n"
          "max_nonfinite_steps = 3\n[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\n"
          "heartbeat_interval_s = 0.2\nheartbeat_misses = 5\n[checkpoint]\ninterval_steps = 5\nkeep = 2\n");
  const auto run_dir = dir.path() / "run";
  const auto r = run_command("MSOMNI_TEST_DIVERGE_AT_STEP=12 " + std::string(MSOMNI_RUN_BINARY) + " " + cfg +
                             " --run-dir " + run_dir.string());
  CAPTURE(r.output);
  CHECK(r.exit_code == 1);
  const auto s = summary_of(run_dir);
  CHECK(s.at("state") == "failed");
  CHECK(s.at("exit_code") == 1);
  CHECK(s.at("reason").get<std::string>().find("training diverges; stopping") != std::string::npos);
  CHECK(s.at("elastic_events").value("training_rollback", 0) == 1);
  CHECK(s.at("checkpoints").at("last_step") == 10);
  CHECK(read_text(run_dir / "summary.txt").find("state         failed (exit code 1)\n") == 0);
}

TEST_CASE("status on an ended run never names a checkpoint that no longer exists as the resume point") {
  msomni::testing::temp_dir dir;
  use_cache_of(dir);
  const auto run_dir = dir.path() / "run";
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                             " --set training.steps=12 --set checkpoint.interval_steps=4 --run-dir " + run_dir.string());
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  const auto s = summary_of(run_dir);
  REQUIRE(s.at("resume").at("checkpoint") == "step-00000012");
  // What a later leader's retention does after this one wrote its summary: the named
  // checkpoint goes, `latest` names another.
  const auto root = fs::path(s.at("checkpoint_dir").get<std::string>());
  fs::remove_all(root / "step-00000012");
  {
    std::ofstream latest(root / "latest", std::ios::trunc);
    latest << "step-00000008\n";
  }
  auto status = run_command(cli("status --json --run-dir " + run_dir.string()));
  CAPTURE(status.output);
  REQUIRE(status.exit_code == 0);
  const auto j = parse_json(status.output);
  CHECK(j.at("resume").at("checkpoint") == "step-00000008");
  CHECK(j.at("resume").at("step") == 8);
  CHECK(j.at("resume_note").get<std::string>().find("step-00000012, which no longer exists") != std::string::npos);
  status = run_command(cli("status --run-dir " + run_dir.string()));
  CHECK(status.output.find("no longer exists") != std::string::npos);
  CHECK(status.output.find("(step-00000012)") == std::string::npos);
}
