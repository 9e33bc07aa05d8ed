// msomni-run without --dry-run: a real control process and rank processes over UCX train
// the quickstart; the run directory gets its journals and a private control file. Failures:
// a rank killed with SIGKILL or stopped with SIGSTOP is detected, the survivors roll back to
// the last checkpoint and a replacement joins; a node lost with no slot to spare below
// elasticity.min_replicas ends the job with the reason.
#include "core/child_process.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::has_event;
using msomni::testing::has_reason_containing;
using msomni::testing::read_json_lines;

namespace {

std::string read_file(const fs::path& p) { return msomni::testing::read_text(p); }

pid_t rank_pid(const fs::path& run_dir, const std::string& name) {
  return msomni::testing::rank_pid(MSOMNI_CLI_BINARY, run_dir, name);
}

// A job of 2 replicas on the quickstart's shards (through the data stage actors, rendered
// into `dir`'s own cache), slow enough to be caught mid-run.
std::string shard_job(const msomni::testing::temp_dir& dir, int64_t steps, int64_t min_replicas) {
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);  // this test process and its children
  return "[job]\nname = \"failures\"\n"
         "[model]\nname = \"fuyu-tiny\"\nd_model = 64\nn_layers = 2\nn_heads = 4\nd_ff = 128\nimage_size = 16\n"
         "patch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"generated://quickstart/images\"\nmodality = \"image\"\n"
         "[[data.sources]]\nname = \"moving\"\nuri = \"generated://quickstart/videos\"\nmodality = \"video\"\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = 2\nsteps = " + std::to_string(steps) +
         "\nlr = 1e-3\nseed = 5\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = " + std::to_string(min_replicas) +
         "\nmax_replicas = 2\nheartbeat_interval_s = 0.2\nheartbeat_misses = 5\n"
         "[checkpoint]\ninterval_steps = 10\n";
}

size_t metric_lines(const fs::path& run_dir) {
  return fs::exists(run_dir / "metrics.jsonl") ? read_json_lines(run_dir / "metrics.jsonl").size() : 0;
}

// A 400-step synthetic job of 2 replicas (min 1) in its own directory, running.
struct failing_job {
  msomni::testing::temp_dir dir;
  fs::path run_dir = dir.path() / "run";
  msomni::child_process job{MSOMNI_RUN_BINARY, {dir.write("job.toml", shard_job(dir, 400, 1)), "--run-dir", run_dir.string()}};
};

std::string quickstart() { return std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml"; }

}  // namespace

TEST_CASE("msomni-run trains the quickstart with real rank processes") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  // An empty cache: the quickstart's dataset is rendered on first use, and the run says so.
  const auto cache = dir.path() / "cache";
  const auto r = msomni::testing::run_command("MSOMNI_CACHE_DIR=" + cache.string() + " " + MSOMNI_RUN_BINARY + " " +
                                              quickstart() + " --set training.steps=12 --run-dir " + run_dir.string());
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("the quickstart dataset is not in the cache yet; generating it") != std::string::npos);
  CHECK(fs::exists(cache / "datasets" / "quickstart" / ".generated"));
  CHECK(r.output.find("step 12/12") != std::string::npos);
  CHECK(read_json_lines(run_dir / "metrics.jsonl").size() == 12);
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(has_event(events, "ranks_started"));
  CHECK(has_event(events, "job_finished"));
  CHECK_FALSE(has_event(events, "rank_down"));
  struct stat st {};
  REQUIRE(::stat((run_dir / "control.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const auto control = msomni::testing::parse_json(read_file(run_dir / "control.json"));
  CHECK(control.at("token").is_string());
  CHECK(control.at("address").is_string());
  CHECK(control.at("pid").is_number_integer());
}

TEST_CASE("a rank killed with SIGKILL is detected and the job recovers and completes") {
  failing_job j;
  const auto& run_dir = j.run_dir;
  auto& job = j.job;
  msomni::testing::wait_for_checkpoint(run_dir);
  REQUIRE(fs::exists(run_dir / "checkpoints" / "latest"));
  const pid_t victim = rank_pid(run_dir, "rank-1");
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  const int code = job.wait(180s);
  CAPTURE(read_file(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(code == 0);
  // Detection, rollback, recovery and the replacement, each with its time.
  for (const char* e : {"rank_down", "recovery", "recovered", "replacement", "scale_up_done", "job_finished"}) {
    CHECK_MESSAGE(has_event(events, e), e);
    for (const auto& record : msomni::testing::events_named(events, e)) CHECK(record.at("time_ms").is_number_unsigned());
  }
  CHECK(has_event(events, "rank_down", "rank-1"));
  bool step_400 = false, world_1 = false;
  for (const auto& m : read_json_lines(run_dir / "metrics.jsonl")) {
    step_400 = step_400 || m.at("step") == 400;
    world_1 = world_1 || m.at("world_size") == 1;
  }
  CHECK(step_400);
  CHECK(world_1);
}

TEST_CASE("a silent rank (SIGSTOP) is declared down by missed keep-alives and the job recovers") {
  failing_job j;
  const auto& run_dir = j.run_dir;
  auto& job = j.job;
  msomni::testing::wait_for_checkpoint(run_dir);
  REQUIRE(fs::exists(run_dir / "checkpoints" / "latest"));
  const pid_t victim = rank_pid(run_dir, "rank-0");
  REQUIRE(victim > 0);
  ::kill(victim, SIGSTOP);  // no socket closes: only the missing keep-alives can tell
  const int code = job.wait(180s);
  ::kill(victim, SIGKILL);  // stopped by the agent normally; harmless otherwise
  CAPTURE(read_file(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(code == 0);
  CHECK(has_event(events, "rank_down", "rank-0"));
  CHECK(has_event(events, "recovery"));
  CHECK(has_event(events, "job_finished"));
}

TEST_CASE("a lost node with no slot to spare below min_replicas ends the job with the reason") {
  msomni::testing::temp_dir dir;
  auto text = shard_job(dir, 100000, 2);
  text += "[[cluster.nodes]]\nname = \"node-a\"\nslots = 1\n[[cluster.nodes]]\nname = \"node-b\"\nslots = 1\n";
  const auto cfg = dir.write("job.toml", text);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  for (int i = 0; i < 600 && !fs::exists(run_dir / "control.json"); ++i) std::this_thread::sleep_for(50ms);
  const auto address = msomni::testing::parse_json(read_file(run_dir / "control.json")).at("address").get<std::string>();
  std::vector<std::unique_ptr<msomni::child_process>> agents;
  for (const char* node : {"node-a", "node-b"})
    agents.push_back(std::make_unique<msomni::child_process>(
        MSOMNI_AGENT_BINARY, std::vector<std::string>{"--join", address, "--token-file", (run_dir / "control.json").string(),
                                                      "--node", node, "--heartbeat-s", "0.2",
                                                      "--log-dir", (dir.path() / node).string()}));
  for (int i = 0; i < 600 && metric_lines(run_dir) < 3; ++i) std::this_thread::sleep_for(50ms);
  REQUIRE(metric_lines(run_dir) >= 3);
  ::kill(agents[1]->pid(), SIGKILL);  // the node and its rank (it dies with its agent) are gone
  CHECK(job.wait(60s) == 1);
  CHECK(agents[0]->wait(30s) == 0);
  CAPTURE(read_file(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(has_event(events, "agent_down"));
  CHECK(has_reason_containing(events, "min_replicas 2"));
  CHECK(has_event(events, "job_failed"));
}
