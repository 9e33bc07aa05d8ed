// Torch models as real msomni jobs (msomni-run, its ranks and their Python workers): N steps
// straight equal N/2 steps, a stop and a resume to N, loss for loss and in the parameter
// checksum, with dropout on; a 2 -> 1 -> 2 scale through the msomni CLI runs every step once;
// a rank killed with SIGKILL takes its worker with it, and the job recovers and completes;
// `msomni ckpt export` writes the module's whole state_dict, which load_state_dict takes; a rank
// whose interpreter has no torch fails the job with that reason. The jobs are in
// torch_jobs.hpp; what a native job guarantees (a 4 -> 2 -> 4 scale, a preemption under
// msomni-sched, autoscaling, inspect and the metrics keys) is in torch_job_guarantees_test.cpp.
// Skipped when /usr/bin/python3 cannot import torch.
#include "core/child_process.hpp"
#include "models/torch_jobs.hpp"
#include "models/torch_python.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::cli;
using msomni::testing::has_event;
using msomni::testing::has_world;
using msomni::testing::read_json_lines;
using msomni::testing::read_step_losses;
using msomni::testing::run_command;
using msomni::testing::step_counts;
using msomni::testing::wait_for;

namespace {

const std::string modules_dir = std::string(MSOMNI_SOURCE_DIR) + "/tests/models/torch_modules";

using msomni::testing::fuyu_job;
using msomni::testing::torch_data_and_io;

// A slower module (each forward sleeps `delay_ms`), with dropout, for acting on a running job.
std::string slow_job(int64_t steps, int64_t delay_ms) {
  return "[job]\nname = \"torch-slow\"\n[model]\nname = \"torch\"\ntorch_file = \"" + modules_dir +
         "/tiny_lm.py\"\ntorch_class = \"TinyLM\"\ntorch_args = { dropout = 0.1, delay_ms = " + std::to_string(delay_ms) +
         " }\nimage_size = 16\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n" + torch_data_and_io() +
         "[training]\nglobal_batch = 4\nmicro_batch = 2\nsteps = " + std::to_string(steps) +
         "\nlr = 3e-3\nseed = 5\ndevice = \"cpu\"\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\ngrace_period_s = 30\n"
         "heartbeat_interval_s = 0.2\nheartbeat_misses = 5\n[checkpoint]\ninterval_steps = 10\n";
}


// The parameter checksum a rank logged when it finished: "RESULT ok finished step=N checksum=X".
std::string final_checksum(const fs::path& run_dir, const std::string& rank) {
  std::ifstream in(run_dir / "logs" / (rank + ".log"));
  std::string last;
  const std::regex result(R"(RESULT ok finished step=\d+ checksum=([0-9a-f]+))");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, result)) last = m[1];
  return last;
}


// The processes whose parent is `pid` (/proc/PID/stat's fourth field).
std::set<pid_t> children_of(pid_t pid) {
  std::set<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent == pid) out.insert(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// Running: it exists and is not a zombie waiting for whoever adopted it to reap it.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

}  // namespace

TEST_CASE("a torch job of N steps equals N/2 steps, a stop and a resume to N, loss for loss and in its checksum") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  msomni::testing::temp_dir dir;
  const int64_t steps = 40;
  const auto cfg = dir.write("job.toml", fuyu_job({.steps = steps}));
  const auto straight = dir.path() / "straight", resumed = dir.path() / "resumed";
  const std::string run = std::string(MSOMNI_RUN_BINARY) + " " + cfg + " --fresh --run-dir ";
  auto r = run_command(run + straight.string());
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  r = run_command(run + resumed.string() + " --set training.steps=" + std::to_string(steps / 2));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(read_step_losses(resumed / "metrics.jsonl").lines == static_cast<size_t>(steps / 2));
  // The second start resumes from the checkpoint of step N/2 (no --fresh).
  r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg + " --run-dir " + resumed.string());
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(has_event(read_json_lines(resumed / "events.jsonl"), "resume"));

  const auto a = read_step_losses(straight / "metrics.jsonl"), b = read_step_losses(resumed / "metrics.jsonl");
  REQUIRE(a.by_step.size() == static_cast<size_t>(steps));
  REQUIRE(b.by_step.size() == static_cast<size_t>(steps));
  CHECK(b.lines == static_cast<size_t>(steps));
  int differ = 0;
  for (const auto& [step, v] : a.by_step) {
    CAPTURE(step);
    if (b.by_step.at(step).first != v.first) ++differ;
  }
  CHECK(differ == 0);  // bit for bit, dropout included
  CHECK(a.by_step.at(steps).first < a.by_step.at(1).first);
  for (const char* rank : {"rank-0", "rank-1"}) {
    CAPTURE(rank);
    const auto sum = final_checksum(straight, rank);
    CHECK(!sum.empty());
    CHECK(final_checksum(resumed, rank) == sum);
  }
  CHECK(final_checksum(straight, "rank-0") == final_checksum(straight, "rank-1"));  // replicas agree
}

TEST_CASE("a torch job scaled from 2 ranks to 1 and back to 2 runs every step once") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("job.toml", slow_job(100000, 15));
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--fresh", "--run-dir", run_dir.string()});
  REQUIRE(wait_for([&] { return read_step_losses(run_dir / "metrics.jsonl").by_step.size() >= 10; }, 120s));
  const auto world_after = [&](int world, uint64_t after) { return has_world(run_dir / "metrics.jsonl", world, after); };
  const auto before_down = msomni::testing::last_step(run_dir);
  auto r = run_command(cli("scale-down --run-dir " + run_dir.string() + " --replicas 1 --grace-period 30s"));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(wait_for([&] { return world_after(1, before_down); }, 90s));
  const auto before_up = msomni::testing::last_step(run_dir);
  r = run_command(cli("scale-up --run-dir " + run_dir.string() + " --replicas 2"));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(wait_for([&] { return world_after(2, before_up + 5); }, 120s));
  r = run_command(cli("stop --run-dir " + run_dir.string()));
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  CHECK(job.wait(90s) == 5);  // stopped, resumable

  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  for (const char* e : {"scale_down", "scale_down_done", "scale_up", "scale_up_done"}) CHECK_MESSAGE(has_event(events, e), e);
  CHECK_FALSE(has_event(events, "rank_down"));
  // Every step once, none missing, in metrics.jsonl and in rank 0's own log.
  const auto steps = read_step_losses(run_dir / "metrics.jsonl");
  CHECK(steps.lines == steps.by_step.size());
  CHECK(steps.by_step.begin()->first == 1);
  CHECK(steps.by_step.rbegin()->first == steps.by_step.size());
  const auto ran = step_counts(run_dir / "logs" / "rank-0.log");
  CHECK(ran.size() == steps.by_step.size());
  int repeated = 0;
  for (const auto& [step, n] : ran) repeated += n != 1;
  CHECK(repeated == 0);
  bool one = false, two_after = false;
  for (const auto& [step, v] : steps.by_step) {
    one = one || v.second == 1;
    two_after = two_after || (one && v.second == 2);
  }
  CHECK(one);
  CHECK(two_after);
}

TEST_CASE("a torch job's rank killed with SIGKILL takes its worker with it, and the job recovers and completes") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  msomni::testing::temp_dir dir;
  const int64_t steps = 150;
  const auto cfg = dir.write("job.toml", slow_job(steps, 5));
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--fresh", "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for_checkpoint(run_dir));
  const pid_t victim = msomni::testing::rank_pid(MSOMNI_CLI_BINARY, run_dir, "rank-1");
  REQUIRE(victim > 0);
  const auto workers = children_of(victim);
  REQUIRE(workers.size() == 1);  // its Python worker
  const pid_t worker = *workers.begin();
  ::kill(victim, SIGKILL);
  // The worker reads the end of its socket and exits (its parent is gone: init reaps it).
  CHECK(wait_for([&] { return !running(worker); }, 30s));
  const int code = job.wait(240s);
  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  CHECK(code == 0);
  const auto events = read_json_lines(run_dir / "events.jsonl");
  for (const char* e : {"rank_down", "recovery", "recovered", "job_finished"}) CHECK_MESSAGE(has_event(events, e), e);
  CHECK(has_event(events, "rank_down", "rank-1"));
  const auto s = read_step_losses(run_dir / "metrics.jsonl");
  CHECK(s.by_step.count(steps) == 1);
  CHECK(s.by_step.size() == static_cast<size_t>(steps));
}

TEST_CASE("msomni ckpt export writes a torch module's whole state_dict, which load_state_dict takes strictly") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  msomni::testing::temp_dir dir;
  const std::string loader = "/usr/bin/python3 " + modules_dir + "/load_exported.py ";
  // A module with a tied weight and persistent buffers (one of them an integer).
  auto text = slow_job(12, 0);
  text.replace(text.find("torch_args = { "), 15, "torch_args = { tied = true, ");
  const auto cfg = dir.write("tied.toml", text);
  const auto tied_run = dir.path() / "tied";
  auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg + " --fresh --run-dir " + tied_run.string());
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  const auto tied_file = (dir.path() / "tied.safetensors").string();
  r = run_command(cli("ckpt export " + tied_run.string() + " --rank 1 --out " + tied_file));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("exported 8 tensors") != std::string::npos);  // 5 parameters, 1 tied name, 2 buffers
  r = run_command(loader + tied_file + " " + modules_dir + "/tiny_lm.py TinyLM '{\"tied\": true}'");
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  auto loaded = msomni::testing::parse_json(r.output);
  CHECK(loaded.at("keys") == nlohmann::json::array({"batches_seen", "embed.weight", "hidden.bias", "hidden.weight",
                                                    "loss_mean", "norm.bias", "norm.weight", "out.weight"}));
  CHECK(loaded.at("equal") == true);
  CHECK(loaded.at("aligned") == true);
  CHECK(loaded.at("tied") == true);
  CHECK(loaded.at("class") == "TinyLM");
  // Rank 1's own count of its training forwards: 12 steps of one micro-batch each.
  CHECK(loaded.at("batches_seen") == 12);

  // The reference module: parameters only (its causal mask is not persistent).
  const auto fuyu_run = dir.path() / "fuyu";
  r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + dir.write("fuyu.toml", fuyu_job({.steps = 10})) + " --fresh --run-dir " +
                  fuyu_run.string());
  REQUIRE(r.exit_code == 0);
  const auto fuyu_file = (dir.path() / "fuyu.safetensors").string();
  REQUIRE(run_command(cli("ckpt export " + fuyu_run.string() + " --out " + fuyu_file)).exit_code == 0);
  r = run_command(loader + fuyu_file + " " + std::string(MSOMNI_SOURCE_DIR) +
                  "/configs/torch_fuyu_tiny.py FuyuTiny '{\"d_model\": 32, \"n_layers\": 2, \"n_heads\": 2, \"d_ff\": 64, "
                  "\"patch_dim\": 192, \"max_seq_len\": 64}'");
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  loaded = msomni::testing::parse_json(r.output);
  CHECK(loaded.at("equal") == true);
  CHECK(loaded.at("keys").size() == 31);  // 2 patch, 2 embeddings, 12 per block, 2 final norm, 1 head
}

TEST_CASE("a rank whose interpreter cannot import torch fails the job, saying so") {
  if (const auto why = msomni::testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  msomni::testing::temp_dir dir;
  // torch for msomni-run's check, none for the ranks (their agent sets MSOMNI_NODE_SLOTS): a
  // node without torch that msomni-run's machine cannot see.
  const auto python = dir.write("python", "#!/bin/sh\nif [ -n \"$MSOMNI_NODE_SLOTS\" ]; then exec /usr/bin/python3 -S \"$@\"; fi\n"
                                          "exec /usr/bin/python3 \"$@\"\n");
  REQUIRE(run_command("chmod +x " + python).exit_code == 0);
  auto text = slow_job(10, 0);
  text.replace(text.find("image_size = 16"), 0, "torch_python = \"" + python + "\"\n");
  const auto run_dir = dir.path() / "run";
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + dir.write("job.toml", text) + " --fresh --run-dir " +
                             run_dir.string());
  CAPTURE(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("failed: /usr/bin/python3 (Python ") != std::string::npos);
  CHECK(r.output.find("cannot import torch: ModuleNotFoundError: No module named 'torch'") != std::string::npos);
  CHECK(msomni::testing::has_reason_containing(read_json_lines(run_dir / "events.jsonl"), "cannot import torch"));
}
