// Elastic training with real processes on real shards (the data stage actors feed every
// rank): msomni-run with 4 replicas is scaled down to 2 and back up to 4 through the msomni
// CLI while it trains; every step runs exactly once and the
// per-step losses match a static 4-replica run. Also: the CLI refuses requests without the
// token and scales below min_replicas; `stop` ends with a final checkpoint that the next
// msomni-run resumes from; two msomni-agent "nodes" on loopback run one job.
#include "core/child_process.hpp"
#include "core/json_number.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <algorithm>
#include <signal.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::has_event;
using msomni::testing::has_reason_containing;
using msomni::testing::read_step_losses;
using msomni::testing::run_command;

namespace {

std::string read_file(const fs::path& p) { return msomni::testing::read_text(p); }

// A job slow enough (a few ms per step) for the CLI to act while it trains, on the
// quickstart's shards (images, H.264 videos, captions) through the data stage actors, the
// default data path; the shards are rendered into `dir`'s own cache. Videos are never
// downgraded: a downgrade follows live timing, so a downgraded video's frames (and every
// loss after it) would differ from the static run the elastic run is compared with.
std::string elastic_config(const msomni::testing::temp_dir& dir, int64_t steps, int64_t replicas, int64_t grad_accum,
                           int64_t d_model = 64) {
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);  // this test process and its children
  return "[job]\nname = \"elastic\"\n"
         "[model]\nname = \"fuyu-tiny\"\nd_model = " + std::to_string(d_model) + "\nn_layers = 2\nn_heads = 4\nd_ff = " +
         std::to_string(2 * d_model) + "\nimage_size = 16\n"
         "patch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"generated://quickstart/images\"\nmodality = \"image\"\nweight = 2.0\n"
         "[[data.sources]]\nname = \"moving\"\nuri = \"generated://quickstart/videos\"\nmodality = \"video\"\nweight = 1.0\n"
         "[[data.sources]]\nname = \"text\"\nuri = \"generated://quickstart/text\"\nmodality = \"text\"\nweight = 1.0\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = " + std::to_string(grad_accum) +
         "\nsteps = " + std::to_string(steps) + "\nlr = 1e-3\nseed = 11\n"
         "[elasticity]\nreplicas = " + std::to_string(replicas) +
         "\nmin_replicas = 2\nmax_replicas = 4\ngrace_period_s = 60\nheartbeat_interval_s = 1\n"
         "[checkpoint]\ninterval_steps = 25\nkeep = 2\n"
         "[io]\ndowngrade_video = false\n";
}


using msomni::testing::has_world;
using msomni::testing::last_step;
using msomni::testing::step_counts;
using msomni::testing::wait_for;

std::string cli(const std::string& args) { return std::string(MSOMNI_CLI_BINARY) + " " + args; }

}  // namespace

TEST_CASE("scale-down to 2 and back up to 4 while training: each step once and the losses of a static run") {
  msomni::testing::temp_dir dir;
  const int64_t steps = 240;
  // A wider model: its steps are slow enough for both resizes to land while it trains.
  const auto cfg = dir.write("elastic.toml", elastic_config(dir, steps, 4, 1, 128));
  const auto run_dir = dir.path() / "elastic";
  const auto static_dir = dir.path() / "static";

  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  const auto metrics_file = run_dir / "metrics.jsonl";
  REQUIRE(wait_for([&] { return read_step_losses(metrics_file).by_step.size() >= 20; }, 120s));

  // Refusals first: no token, below min_replicas, a world that cannot split the batch.
  auto r = run_command(cli("scale-down --run-dir " + run_dir.string() + " --replicas 2 --token not-the-token"));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("refused: missing or wrong token") != std::string::npos);
  r = run_command(cli("scale-down --run-dir " + run_dir.string() + " --replicas 1"));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("min_replicas 2") != std::string::npos);
  r = run_command(cli("scale-down --run-dir " + run_dir.string() + " --replicas 3"));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("cannot be split over 3") != std::string::npos);

  const auto before_down = last_step(run_dir);
  r = run_command(cli("scale-down --run-dir " + run_dir.string() + " --replicas 2 --grace-period 60s"));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(wait_for([&] { return has_world(metrics_file, 2, before_down); }, 60s));
  r = run_command(cli("status --run-dir " + run_dir.string() + " --json"));
  CHECK(r.exit_code == 0);
  const auto status = msomni::testing::parse_json(r.output);
  CHECK(status.at("world") == 2);
  bool left = false;
  for (const auto& rank : status.at("ranks")) {
    CHECK(rank.contains("pid"));
    CHECK(rank.value("state", "") != "left");  // departed ranks are listed apart
  }
  for (const auto& rank : status.at("departed")) left = left || rank.value("state", "") == "left";
  CHECK(left);

  const auto before_up = last_step(run_dir);
  r = run_command(cli("scale-up --run-dir " + run_dir.string() + " --replicas 4"));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(job.wait(180s) == 0);

  const auto elastic = read_step_losses(metrics_file);
  CAPTURE(read_file(run_dir / "events.jsonl"));
  const auto events = msomni::testing::read_json_lines(run_dir / "events.jsonl");
  for (const char* e : {"scale_down", "scale_down_done", "scale_up", "scale_up_join", "scale_up_done", "job_finished"})
    CHECK_MESSAGE(has_event(events, e), e);
  CHECK_FALSE(has_event(events, "rank_down"));
  CHECK(has_world(metrics_file, 4, before_up));
  // Every step exactly once: in metrics.jsonl and in rank 0's own log (rank-0 stays rank 0).
  CHECK(elastic.lines == static_cast<size_t>(steps));
  CHECK(elastic.by_step.size() == static_cast<size_t>(steps));
  CHECK(elastic.by_step.begin()->first == 1);
  const auto counts = step_counts(run_dir / "logs" / "rank-0.log");
  CHECK(counts.size() == static_cast<size_t>(steps));
  int repeated = 0;
  for (const auto& [step, n] : counts) repeated += n != 1;
  CHECK(repeated == 0);
  // A checkpoint was committed and verified before the leavers left.
  CHECK(read_file(run_dir / "logs" / "rank-2.log").find("CHECKPOINT verified step") != std::string::npos);

  // The same config without changes.
  const auto s = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg + " --run-dir " + static_dir.string());
  REQUIRE(s.exit_code == 0);
  const auto reference = read_step_losses(static_dir / "metrics.jsonl");
  REQUIRE(reference.by_step.size() == static_cast<size_t>(steps));
  // The two runs sum gradients in another order while the world is 2 (grad_accum 2 instead of
  // 1), and that rounding gap compounds over the steps after the resize, which land at a step
  // that depends on the machine's speed. So the bound is relative to the loss, but never
  // tighter than 1e-3 absolute: near the end the loss is small and a relative bound would
  // grow with how early the resize came (seen on a loaded machine: 0.0013-0.0027 relative at
  // step 240). A lost, repeated or misweighted step moves the loss by far more.
  const auto gap = msomni::testing::largest_loss_gap(reference, elastic);
  MESSAGE("largest loss difference to the static run (relative above 1, absolute below): " << gap.worst << " at step "
                                                                                          << gap.step);
  CHECK(gap.worst < 1e-3);
}

TEST_CASE("stop saves a final checkpoint and the next msomni-run resumes from it") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("elastic.toml", elastic_config(dir, 100000, 2, 2));
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  REQUIRE(wait_for([&] { return read_step_losses(run_dir / "metrics.jsonl").by_step.size() >= 10; }, 120s));
  auto r = run_command(cli("stop --run-dir " + run_dir.string()));
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  CHECK(job.wait(60s) == 5);  // stopped, resumable
  CHECK(has_reason_containing(msomni::testing::read_json_lines(run_dir / "events.jsonl"), "stopped at step"));
  const auto stopped_at = last_step(run_dir);
  const auto latest = read_file(run_dir / "checkpoints" / "latest");
  CHECK(latest.find(std::to_string(stopped_at)) != std::string::npos);
  // The CLI on a job that has ended answers from its summary.
  r = run_command(cli("status --run-dir " + run_dir.string()));
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("job stopped (it has ended") == 0);
  // Resume: with steps = stopped_at + 5 the job runs exactly the 5 missing steps.
  const auto resumed = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg + " --run-dir " + run_dir.string() +
                                   " --set training.steps=" + std::to_string(stopped_at + 5));
  CAPTURE(resumed.output);
  CHECK(resumed.exit_code == 0);
  const auto after = read_step_losses(run_dir / "metrics.jsonl");
  CHECK(after.by_step.rbegin()->first == stopped_at + 5);
  CHECK(after.lines == stopped_at + 5);
}

TEST_CASE("two msomni-agent nodes on loopback with different racks run one job") {
  msomni::testing::temp_dir dir;
  auto text = elastic_config(dir, 60, 2, 2);
  text += "[[cluster.nodes]]\nname = \"node-a\"\nrack = \"rack-a\"\nslots = 1\n"
          "[[cluster.nodes]]\nname = \"node-b\"\nrack = \"rack-b\"\nslots = 1\n";
  text = std::regex_replace(text, std::regex("max_replicas = 4"), "max_replicas = 2");
  const auto cfg = dir.write("two-nodes.toml", text);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  REQUIRE(wait_for([&] { return fs::exists(run_dir / "control.json"); }, 30s));
  const auto address = msomni::testing::parse_json(read_file(run_dir / "control.json")).at("address").get<std::string>();
  std::vector<std::unique_ptr<msomni::child_process>> agents;
  for (const auto& [node, rack] : {std::pair{"node-a", "rack-a"}, std::pair{"node-b", "rack-b"}})
    agents.push_back(std::make_unique<msomni::child_process>(
        MSOMNI_AGENT_BINARY, std::vector<std::string>{"--join", address, "--token-file", (run_dir / "control.json").string(),
                                                      "--node", node, "--rack", rack, "--slots", "1",
                                                      "--heartbeat-s", "1", "--log-dir", (dir.path() / node).string()}));
  CHECK(job.wait(120s) == 0);
  for (auto& a : agents) CHECK(a->wait(30s) == 0);
  CAPTURE(read_file(run_dir / "events.jsonl"));
  const auto events = msomni::testing::read_json_lines(run_dir / "events.jsonl");
  CHECK(has_reason_containing(events, "node-a (rack rack-a"));
  CHECK(has_reason_containing(events, "node-b (rack rack-b"));
  CHECK(has_reason_containing(events, "on node node-a"));
  CHECK(has_reason_containing(events, "on node node-b"));
  CHECK(has_event(events, "job_finished"));
  // Each node ran one of the two ranks, with its log on that node.
  CHECK(fs::exists(dir.path() / "node-a" / "rank-0.log") != fs::exists(dir.path() / "node-b" / "rank-0.log"));
  CHECK(read_step_losses(run_dir / "metrics.jsonl").by_step.size() == 60);
}

TEST_CASE("a leaving rank that freezes during a scale-down: the others roll back and finish at the new size") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("elastic.toml", elastic_config(dir, 400, 4, 1));
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  const auto metrics_file = run_dir / "metrics.jsonl";
  REQUIRE(msomni::testing::wait_for_checkpoint(run_dir));
  const pid_t leaver = msomni::testing::rank_pid(MSOMNI_CLI_BINARY, run_dir, "rank-3");
  REQUIRE(leaver > 0);
  ::kill(leaver, SIGSTOP);  // it will never reach the barrier
  auto r = run_command(cli("scale-down --run-dir " + run_dir.string() + " --replicas 2 --grace-period 30s"));
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  CHECK(job.wait(180s) == 0);
  ::kill(leaver, SIGKILL);
  CAPTURE(read_file(run_dir / "events.jsonl"));
  const auto events = msomni::testing::read_json_lines(run_dir / "events.jsonl");
  CHECK(has_event(events, "rank_down", "rank-3"));
  CHECK(has_event(events, "recovery"));
  CHECK(has_event(events, "recovered"));
  CHECK(has_event(events, "job_finished"));
  const auto m = read_step_losses(metrics_file);
  CHECK(m.by_step.rbegin()->first == 400);
  CHECK(m.by_step.rbegin()->second.second == 2);
}

TEST_CASE("a frozen rank: the survivor joins the plan without it as soon as the heartbeat finds it, not after a fixed wait") {
  msomni::testing::temp_dir dir;
  // Heartbeat 0.5 s x 3: the frozen rank is declared down 1.5 s after its last keep-alive.
  auto text = elastic_config(dir, 100000, 2, 2);
  text = std::regex_replace(text, std::regex("min_replicas = 2"), "min_replicas = 1");
  text = std::regex_replace(text, std::regex("heartbeat_interval_s = 1"), "heartbeat_interval_s = 0.5\nheartbeat_misses = 3");
  const auto cfg = dir.write("elastic.toml", text);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for_checkpoint(run_dir));
  const pid_t frozen = msomni::testing::rank_pid(MSOMNI_CLI_BINARY, run_dir, "rank-1");
  REQUIRE(frozen > 0);
  ::kill(frozen, SIGSTOP);
  const auto frozen_at = std::chrono::steady_clock::now();
  // rank-0's collective fails first and the control process replans with both members (it has
  // not found the frozen one yet); then rank-1 is declared down and the next plan supersedes
  // the first while rank-0 still waits for it.
  const auto events_file = run_dir / "events.jsonl";
  REQUIRE(wait_for([&] { return has_event(msomni::testing::read_json_lines(events_file), "rank_down", "rank-1"); }, 60s));
  const uint64_t steps_before = read_step_losses(run_dir / "metrics.jsonl").lines;
  REQUIRE(wait_for([&] { return read_step_losses(run_dir / "metrics.jsonl").lines > steps_before + 2; }, 60s));
  const auto resumed_after = std::chrono::steady_clock::now() - frozen_at;
  ::kill(frozen, SIGCONT);
  CAPTURE(read_file(run_dir / "events.jsonl"));
  const auto log = read_file(run_dir / "logs" / "rank-0.log");
  CAPTURE(log.substr(log.size() > 6000 ? log.size() - 6000 : 0));
  // Before, a member of a plan had 30 s to come up, whatever the heartbeat, and the survivor
  // sat out that wait in full. The bound here is that old wait, not a speed target.
  CHECK(resumed_after < 30s);
  // Two orders are both right: the heartbeat finds rank-1 before rank-0's collective fails, and
  // the first plan after the freeze already leaves it out; or the first plan still names it, and
  // rank-0's wait for it ends when the next plan supersedes it or at the heartbeat's bound.
  const auto events = msomni::testing::read_json_lines(events_file);
  const auto first_recovery = std::find_if(events.begin(), events.end(), [](const auto& e) { return e.value("event", "") == "recovery"; });
  const bool first_plan_without_it =
      first_recovery != events.end() && first_recovery->value("reason", "").rfind("rank-1 is down", 0) == 0;
  CHECK((first_plan_without_it || log.find("superseded epoch") != std::string::npos ||
         log.find("(the heartbeat's detection time)") != std::string::npos));
  CHECK(log.find("never came up") == std::string::npos);

  // The CLI against the same live job: an empty token is refused at once as the usage error
  // it is, not sent and then taken for a job that does not answer; a control.json others can
  // read is refused before anything is sent, as the agents do.
  auto r = run_command(cli("status --run-dir " + run_dir.string() + " --token ''"));
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--token is empty") != std::string::npos);
  const auto control_json = run_dir / "control.json";
  fs::permissions(control_json, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  r = run_command(cli("status --run-dir " + run_dir.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("can be read by others") != std::string::npos);
  fs::permissions(control_json, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  CHECK(run_command(cli("stop --run-dir " + run_dir.string())).exit_code == 0);
  CHECK(job.wait(120s) == 5);
}
