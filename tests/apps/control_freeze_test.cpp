// The control process while things change, with real processes. One that stands still
// (SIGSTOP, no control store) for longer than the heartbeat's silence limit: the ranks train
// on, see it silent, and reconnect to it once it answers again; it journals its own pause,
// takes them back as they run (no rank declared down, no rollback), and their step records of
// the frozen time reach metrics.jsonl: every step once. And `msomni stop` during a recovery is
// queued, not refused: the job stops with a final checkpoint once the recovery has landed.
#include "core/child_process.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <sys/stat.h>

#include <signal.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::events_named;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::temp_dir;

namespace {

// Two ranks of a tiny model on synthetic images; heartbeat 0.5 s x 3: silent after 1.5 s.
std::string job_text(int steps) {
  return "[job]\nname = \"control-freeze\"\n"
         "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\nd_ff = 32\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
         "[training]\nglobal_batch = 4\nmicro_batch = 2\nsteps = " +
         std::to_string(steps) +
         "\nseed = 5\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\nheartbeat_interval_s = 0.5\n"
         "heartbeat_misses = 3\n"
         "[checkpoint]\ninterval_steps = 50\n";
}

}  // namespace

TEST_CASE("a control process frozen past the silence limit takes its ranks back as they run: every step recorded once") {
  temp_dir dir;
  const auto cfg = dir.path() / "job.toml";
  const int steps = 4000;
  std::ofstream(cfg) << job_text(steps);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg.string(), "--run-dir", run_dir.string()});
  REQUIRE(msomni::testing::wait_for_checkpoint(run_dir));
  ::kill(job.pid(), SIGSTOP);
  std::this_thread::sleep_for(6s);  // four times the silence limit
  ::kill(job.pid(), SIGCONT);
  CHECK(job.wait(300s) == 0);
  const auto events_text = read_text(run_dir / "events.jsonl");
  CAPTURE(events_text);
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(events_named(events, "control_paused").size() == 1);
  CHECK(events_named(events, "rank_reconnected").size() == 2);
  CHECK(events_named(events, "rank_down").empty());
  CHECK(events_named(events, "recovery").empty());
  CHECK(events_named(events, "steps_unrecorded").empty());
  // Every step once, none missing.
  std::multiset<uint64_t> seen;
  for (const auto& r : read_json_lines(run_dir / "metrics.jsonl")) seen.insert(r.at("step").get<uint64_t>());
  CHECK(seen.size() == static_cast<size_t>(steps));
  CHECK(std::set<uint64_t>(seen.begin(), seen.end()).size() == static_cast<size_t>(steps));
  CHECK(*seen.begin() == 1);
  CHECK(*seen.rbegin() == static_cast<uint64_t>(steps));
  // The ranks saw it go and come back.
  const auto log = read_text(run_dir / "logs" / "rank-0.log");
  CHECK(log.find("CONTROL the control process is gone; training on") != std::string::npos);
  CHECK(log.find("CONTROL adopted by the leader") != std::string::npos);
}

TEST_CASE("msomni stop during a recovery is queued and the job stops with a final checkpoint once it trains again") {
  temp_dir dir;
  const auto cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << job_text(100000);
  // Replacement ranks (rank-2 on) take 4 s to start, so the recovery is still under way when
  // the stop comes.
  const auto wrapper = dir.path() / "slow-replacement.sh";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \" $* \" in *' --name rank-0 '*|*' --name rank-1 '*) ;; *) sleep 4 ;; esac\nexec '"
                         << MSOMNI_RANK_BINARY_PATH << "' \"$@\"\n";
  ::chmod(wrapper.c_str(), 0700);
  ::setenv("MSOMNI_RANK_BINARY", wrapper.c_str(), 1);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg.string(), "--run-dir", run_dir.string(), "--set",
                                                "elasticity.min_replicas=2"});
  ::unsetenv("MSOMNI_RANK_BINARY");
  REQUIRE(msomni::testing::wait_for_checkpoint(run_dir));
  const pid_t victim = msomni::testing::rank_pid(MSOMNI_CLI_BINARY, run_dir, "rank-1");
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  REQUIRE(msomni::testing::wait_for(
      [&] { return !events_named(read_json_lines(run_dir / "events.jsonl"), "recovery_waiting").empty(); }, 30s));
  const auto r = msomni::testing::run_command(std::string(MSOMNI_CLI_BINARY) + " stop --run-dir " + run_dir.string());
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  // Recovering, or growing when the survivor already trains and the replacement is joining.
  CHECK(r.output.find("queued: the job is ") == 0);
  CHECK(job.wait(120s) == 5);  // stopped, resumable
  CAPTURE(read_text(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(events_named(events, "stop_queued").size() == 1);
  CHECK(!events_named(events, "recovered").empty());
  CHECK(events_named(events, "job_stopped").size() == 1);
}
