// msomni-run with real processes keeps other people's files and other runs safe: a second
// msomni-run on a running job's directory is refused with the holder's pid and host and
// touches nothing; --fresh and checkpoint.dir never delete what msomni did not write; a
// SIGKILLed control process leaves a lock the next start takes over; the journals say which
// attempt each line belongs to, so the effective curve has every step exactly once; and
// the run's files are private to the user.
#include "core/child_process.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::read_json_lines;

namespace {

std::string job_text(int64_t steps) {
  return "[job]\nname = \"safety\"\n"
         "[model]\nname = \"fuyu-tiny\"\nd_model = 64\nn_layers = 2\nn_heads = 4\nd_ff = 128\nimage_size = 16\n"
         "patch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = 2\nsteps = " + std::to_string(steps) +
         "\nlr = 1e-3\nseed = 5\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\nheartbeat_interval_s = 0.2\n"
         "heartbeat_misses = 5\n[checkpoint]\ninterval_steps = 10\n";
}

std::string run_cli(const std::string& args) { return std::string(MSOMNI_RUN_BINARY) + " " + args; }

size_t metric_lines(const fs::path& run_dir) { return read_json_lines(run_dir / "metrics.jsonl").size(); }

// Every (step, attempt) of metrics.jsonl in file order.
std::vector<std::pair<uint64_t, uint64_t>> steps_and_attempts(const fs::path& run_dir) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& r : read_json_lines(run_dir / "metrics.jsonl"))
    out.emplace_back(r.at("step").get<uint64_t>(), r.at("attempt").get<uint64_t>());
  return out;
}

// The documented reading rule: a line of a later attempt replaces every earlier line of the
// same or a later step.
std::map<uint64_t, uint64_t> effective_curve(const std::vector<std::pair<uint64_t, uint64_t>>& lines) {
  std::map<uint64_t, uint64_t> curve;  // step -> attempt
  uint64_t attempt = 0;
  for (const auto& [step, a] : lines) {
    if (a != attempt) {
      curve.erase(curve.lower_bound(step), curve.end());
      attempt = a;
    }
    curve[step] = a;
  }
  return curve;
}

}  // namespace

TEST_CASE("a second msomni-run on a running job's directory is refused with the holder and changes nothing") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("job.toml", job_text(100000));
  const auto run_dir = dir.path() / "run";
  msomni::child_process first(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for_checkpoint(run_dir));
  const auto latest = msomni::testing::read_text(run_dir / "checkpoints" / "latest");
  const auto second = msomni::testing::run_command(run_cli(cfg + " --fresh --run-dir " + run_dir.string()));
  CAPTURE(second.output);
  CHECK(second.exit_code == 2);
  CHECK(second.output.find("is in use by another msomni process: pid " + std::to_string(first.pid()) + " on host ") !=
        std::string::npos);
  CHECK(second.output.find("nothing was started") != std::string::npos);
  // The first job's checkpoints and journals are where they were, and it goes on.
  CHECK(fs::exists(run_dir / "checkpoints" / msomni::testing::read_text(run_dir / "checkpoints" / "latest")
                                                  .substr(0, latest.find('\n'))));
  const auto lines = metric_lines(run_dir);
  CHECK(msomni::testing::wait_for([&] { return metric_lines(run_dir) > lines + 3; }, 60s));
  CHECK_FALSE(first.exited());
  // --dry-run says the directory is busy without touching it.
  const auto dry = msomni::testing::run_command(run_cli(cfg + " --dry-run --run-dir " + run_dir.string()));
  CHECK(dry.exit_code == 0);
  CHECK(dry.output.find("in use now by pid " + std::to_string(first.pid())) != std::string::npos);
  ::kill(first.pid(), SIGTERM);  // a graceful stop
  CHECK(first.wait(120s) == 4);  // preempted (SIGTERM) with a final checkpoint
}

TEST_CASE("--fresh and checkpoint.dir never delete what msomni did not write") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("job.toml", job_text(4));
  const auto mine = dir.path() / "my-results";
  fs::create_directories(mine);
  std::ofstream(mine / "table.csv") << "precious\n";
  // Every path stays inside the test's own directory, so that even a msomni-run that
  // deleted what it was given could harm nothing else ("/" is covered by run_paths_test,
  // which decides without deleting).
  const auto run_dir = dir.path() / "jobs" / "run";
  for (const std::string& ckpt : {mine.string(), std::string(".."), std::string(".")}) {
    INFO("checkpoint.dir = " << ckpt);
    for (const char* mode : {" --fresh", " --dry-run", ""}) {
      const auto r = msomni::testing::run_command(run_cli(cfg + mode + " --run-dir " + run_dir.string() +
                                                          " --set checkpoint.dir=" + ckpt));
      CAPTURE(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find("checkpoint.dir: ") != std::string::npos);
    }
  }
  // A run directory with someone else's files in it is refused the same way.
  const auto r = msomni::testing::run_command(run_cli(cfg + " --fresh --run-dir " + mine.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("holds files msomni did not create (table.csv") != std::string::npos);
  CHECK(msomni::testing::read_text(mine / "table.csv") == "precious\n");
  CHECK_FALSE(fs::exists(run_dir));  // nothing was started, nothing created
}

TEST_CASE("after a SIGKILL of msomni-run the next start takes over its lock, and every line names its attempt") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  const auto cfg = dir.write("job.toml", job_text(60));
  {
    msomni::child_process first(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
    // Past a checkpoint and a few steps beyond it, so the next attempt repeats some steps.
    REQUIRE(msomni::testing::wait_for([&] { return metric_lines(run_dir) >= 25; }, 120s));
    first.kill9();
    first.wait(10s);
  }
  // The ranks notice their control process is gone and leave.
  const auto rank_left = [&] {
    // (the bracket keeps pgrep from matching the shell that runs it)
    return msomni::testing::run_command("pgrep -f 'msomni-ran[k] .*--ckpt-dir " + (run_dir / "checkpoints").string() + "'")
               .exit_code != 0;
  };
  CHECK(msomni::testing::wait_for(rank_left, 60s));
  const auto r = msomni::testing::run_command(run_cli(cfg + " --run-dir " + run_dir.string()));
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(msomni::testing::has_reason_containing(events, "took over the lock of " + run_dir.string()));
  // The reasons are text for people; the regexes below read that text, not JSON.
  const std::regex second_attempt("attempt 2 starts: msomni-run started on an existing checkpoint; the ranks resume "
                                  "from the newest one that verifies \\(latest names step [1-9]\\d*\\).*");
  bool second_attempt_seen = false;
  for (const auto& e : msomni::testing::events_named(events, "attempt_started"))
    second_attempt_seen = second_attempt_seen ||
                          (std::regex_match(msomni::testing::reason_of(e), second_attempt) && e.value("attempt", 0) == 2);
  CHECK(second_attempt_seen);
  bool ready_from_checkpoint = false;
  for (const auto& e : msomni::testing::events_named(events, "rank_ready"))
    ready_from_checkpoint = ready_from_checkpoint ||
                            std::regex_search(msomni::testing::reason_of(e), std::regex("^rank-0 .*checkpoint step [1-9]"));
  CHECK(ready_from_checkpoint);
  const auto lines = steps_and_attempts(run_dir);
  bool repeated = false;
  std::map<uint64_t, int> seen;
  uint64_t first_attempt_last = 0, second_attempt_first = 0;
  for (const auto& [step, a] : lines) {
    repeated = repeated || ++seen[step] > 1;
    if (a == 1) first_attempt_last = std::max(first_attempt_last, step);
    if (a == 2 && second_attempt_first == 0) second_attempt_first = step;
  }
  // The second attempt repeats the steps the first journaled past the checkpoint it resumed
  // from: none when the kill came right after a commit.
  CAPTURE(first_attempt_last);
  CAPTURE(second_attempt_first);
  CHECK(second_attempt_first > 0);
  CHECK(repeated == (first_attempt_last >= second_attempt_first));
  const auto curve = effective_curve(lines);
  CHECK(curve.size() == 60);
  CHECK(curve.begin()->first == 1);
  CHECK(curve.rbegin()->first == 60);
  CHECK(curve.rbegin()->second == 2);
  // Private to the user: directories 0700, files 0600.
  for (const auto& p : {run_dir, run_dir / "checkpoints", run_dir / "logs"}) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
  }
  for (const auto& e : fs::recursive_directory_iterator(run_dir)) {
    if (!e.is_regular_file()) continue;
    struct stat st {};
    REQUIRE(::stat(e.path().c_str(), &st) == 0);
    INFO(e.path().string());
    CHECK((st.st_mode & 0077) == 0);
  }
}

TEST_CASE("a journal that cannot be written stops the job loudly instead of training without a record") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  const auto cfg = dir.write("job.toml", job_text(4));
  REQUIRE(msomni::testing::run_command(run_cli(cfg + " --run-dir " + run_dir.string())).exit_code == 0);
  // The disk is full for metrics.jsonl from now on.
  fs::remove(run_dir / "metrics.jsonl");
  fs::create_symlink("/dev/full", run_dir / "metrics.jsonl");
  const auto r = msomni::testing::run_command(run_cli(cfg + " --run-dir " + run_dir.string() + " --set training.steps=400"));
  CAPTURE(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("the run journal cannot be written (cannot write " + (run_dir / "metrics.jsonl").string() +
                      ": No space left on device)") != std::string::npos);
  CHECK(r.output.find("step 400/400") == std::string::npos);
}
