// Checkpoints of a real msomni-run job (control process and rank processes over UCX) are
// durable as soon as they can be: a SIGKILL of msomni-run a little past an interval loses
// only the steps since that interval (its ranks go too, none is left behind), and the rerun
// resumes there. A full disk (a small real tmpfs; skipped where it cannot be mounted): a
// failed save leaves no staging directory behind, saves succeed again once space returns,
// and checkpoint.max_consecutive_failures failed saves in a row end the job with exit 1 and
// the reason.
#include "checkpoint_store.hpp"
#include "core/child_process.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <signal.h>
#include <sys/mount.h>

#include <doctest/doctest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <thread>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::has_event;
using msomni::testing::has_reason_containing;
using msomni::testing::last_step;
using msomni::testing::read_json_lines;

namespace {

// 2 replicas of a synthetic job; `model` sets the model's size (and so the step time).
std::string job_text(int64_t steps, int64_t interval, const std::string& checkpoint_extra,
                     const std::string& model = "d_model = 64\nn_layers = 2\nn_heads = 4\nd_ff = 128\n") {
  return "[job]\nname = \"durable\"\n[model]\nname = \"fuyu-tiny\"\n" + model +
         "image_size = 16\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = 2\nsteps = " + std::to_string(steps) +
         "\nlr = 1e-3\nseed = 5\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\nheartbeat_interval_s = 0.2\n"
         "heartbeat_misses = 5\n"
         "[checkpoint]\ninterval_steps = " + std::to_string(interval) + "\n" + checkpoint_extra;
}

// Live (not zombie) processes whose command line mentions `marker`.
std::vector<pid_t> processes_mentioning(const std::string& marker) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = msomni::testing::read_text(e.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(marker) == std::string::npos) continue;
    const auto stat = msomni::testing::read_text(e.path() / "stat");
    const auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') continue;
    out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// Waits for every process mentioning `marker` to end; kills any left after `limit` and says so.
bool none_left(const std::string& marker, std::chrono::seconds limit) {
  if (msomni::testing::wait_for([&] { return processes_mentioning(marker).empty(); }, limit)) return true;
  for (pid_t p : processes_mentioning(marker)) ::kill(p, SIGKILL);
  return false;
}

uint64_t ckpt_latest_of(const fs::path& root) { return msomni::ckpt::latest_step(root).value_or(0); }
uint64_t ckpt_latest(const fs::path& run_dir) { return ckpt_latest_of(run_dir / "checkpoints"); }

// A save's staging directory under `root`: of any save, or of the save of `step`.
bool staging_left(const fs::path& root, std::optional<uint64_t> step = std::nullopt) {
  char prefix[32];
  if (step) std::snprintf(prefix, sizeof prefix, ".tmp-step-%08llu-", static_cast<unsigned long long>(*step));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.path().filename().string().rfind(step ? prefix : ".tmp-step-", 0) == 0) return true;
  return false;
}

// A tmpfs of `size` mounted over a fresh directory; unmounted (lazily if busy) and removed
// on every way out of the test.
class small_tmpfs {
 public:
  explicit small_tmpfs(const std::string& size) {
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    if (!mounted_) why_ = std::strerror(errno);
  }
  ~small_tmpfs() {
    if (mounted_ && ::umount(dir_.path().c_str()) != 0) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  const fs::path& path() const { return dir_.path(); }

 private:
  msomni::testing::temp_dir dir_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace

TEST_CASE("a SIGKILL of msomni-run past an interval loses only the steps since it and the rerun resumes there") {
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  // About 10 ms a step here, so the job is a little past step 100 for a while.
  const auto cfg = dir.write("job.toml", job_text(400, 50, "", "d_model = 128\nn_layers = 4\nn_heads = 4\nd_ff = 256\n"));
  {
    msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string()});
    REQUIRE(msomni::testing::wait_for([&] { return last_step(run_dir) >= 115; }, 180s));
    ::kill(job.pid(), SIGKILL);
    job.wait(10s);
  }
  const uint64_t reached = last_step(run_dir);
  const auto latest = ckpt_latest(run_dir);
  MESSAGE("msomni-run killed after step " << reached << "; latest checkpoint step " << latest);
  // The ranks notice the control process is gone (keep-alives) and end; none is left behind.
  CHECK(none_left(run_dir.string(), 30s));
  // Committed once durable: the interval just passed is there, not one before it.
  const uint64_t interval_passed = (reached - 10) / 50 * 50;
  REQUIRE(reached >= 110);
  CHECK(latest >= interval_passed);
  CHECK(latest <= reached);
  CHECK(has_reason_containing(read_json_lines(run_dir / "events.jsonl"),
                              "step " + std::to_string(interval_passed) + " committed"));

  const auto rerun = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg + " --run-dir " +
                                                  run_dir.string());
  CAPTURE(rerun.output);
  CHECK(rerun.exit_code == 0);
  const auto log = msomni::testing::read_text(run_dir / "logs" / "rank-0.log");
  CAPTURE(log);
  CHECK(std::regex_search(log, std::regex("JOINED epoch \\d+ as rank 0 of 2 .* at step " + std::to_string(latest) +
                                          " from checkpoint step " + std::to_string(latest))));
  CHECK(latest > 0);
  CHECK(none_left(run_dir.string(), 10s));
}

TEST_CASE("saves that fail on a full tmpfs leave no staging behind and succeed again once space returns") {
  small_tmpfs disk("6m");
  if (!disk.mounted()) {
    MESSAGE("SKIPPED: cannot mount a tmpfs here (" << disk.why() << "); the injected-ENOSPC tests cover it");
    return;
  }
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  const auto root = disk.path() / "ckpt";
  // Two shards of ~1.1 MB each: with the ballast the disk has room for no checkpoint.
  std::ofstream(disk.path() / "ballast", std::ios::binary) << std::string(4700 * 1024, 'x');
  const auto cfg = dir.write("job.toml", job_text(600, 10, "dir = \"" + root.string() +
                                                      "\"\nkeep = 1\nmax_consecutive_failures = 1000\n"));
  // The pre-flight would refuse a disk this full before the start; here the saves must meet it.
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string(), "--set", "health.preflight=\"off\""});
  const auto events = [&] { return read_json_lines(run_dir / "events.jsonl"); };
  REQUIRE(msomni::testing::wait_for([&] { return has_event(events(), "checkpoint_failed"); }, 120s));
  // Rank 0 reports a failure only after removing that save's staging directory (the next
  // save, ten steps on, may have staged its own by now).
  std::smatch failed;
  const auto failed_reason = msomni::testing::events_named(events(), "checkpoint_failed").front().value("reason", "");
  REQUIRE(std::regex_search(failed_reason, failed, std::regex(R"(^step (\d+) not committed)")));
  CHECK_FALSE(staging_left(root, std::stoull(failed[1])));
  CHECK(has_reason_containing(events(), "No space left on device"));
  fs::remove(disk.path() / "ballast");
  CHECK(job.wait(120s) == 0);
  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  // A checkpoint is committed after the failures, once there is room again.
  const auto all = events();
  const auto first_of = [&](const std::string& name) {
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].value("event", "") == name) return i;
    return all.size();
  };
  CHECK(first_of("checkpoint_failed") < all.size());
  CHECK(first_of("checkpoint") > first_of("checkpoint_failed"));
  CHECK(ckpt_latest_of(root) == 600);
  CHECK_FALSE(staging_left(root));
  CHECK(none_left(run_dir.string(), 10s));
}

TEST_CASE("max_consecutive_failures failed saves in a row end the job with exit 1 and the reason") {
  small_tmpfs disk("1m");
  if (!disk.mounted()) {
    MESSAGE("SKIPPED: cannot mount a tmpfs here (" << disk.why() << "); the injected-ENOSPC tests cover it");
    return;
  }
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  const auto root = disk.path() / "ckpt";
  const auto cfg = dir.write("job.toml", job_text(100000, 10, "dir = \"" + root.string() +
                                                         "\"\nmax_consecutive_failures = 3\n"));
  // The pre-flight would refuse a disk this small before the start; here the saves must meet it.
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg, "--run-dir", run_dir.string(), "--set", "health.preflight=\"off\""});
  auto out = job.read_until("job failed: ", 120s);
  CHECK(job.wait(60s) == 1);
  REQUIRE(out);
  CAPTURE(*out);
  CHECK(out->find("3 checkpoint saves failed in a row") != std::string::npos);
  CHECK(out->find("No space left on device") != std::string::npos);
  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(msomni::testing::events_named(events, "checkpoint_failed").size() == 3);
  CHECK(has_event(events, "job_failed"));
  CHECK(out->find(" failed: 3 checkpoint saves failed in a row") != std::string::npos);  // the first rank to leave
  CHECK(msomni::testing::events_named(events, "recovery").empty());  // the failed leave ends the job, no recovery
  CHECK(last_step(run_dir) < 60);
  CHECK_FALSE(staging_left(root));
  CHECK(none_left(run_dir.string(), 10s));
}
