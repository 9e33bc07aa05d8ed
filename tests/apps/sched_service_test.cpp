// msomni-sched and `msomni job` as real processes over UCX on loopback: the scheduler
// service runs the same scheduler_core as msomni-sim; jobs wrap a command. A critical job
// preempts a running regular job, whose command gets SIGTERM, ends, is reported released
// and is started again once the critical job is done; its scratch files go each time. A job without the token cannot reach
// the scheduler; bad flags exit with 2. msomni-run itself, preempted under msomni job, saves
// a final checkpoint, resumes from it and matches an uninterrupted run loss for loss.
#include "support/text_and_pids.hpp"
#include "core/child_process.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/sched_service.hpp"

#include <sys/stat.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using msomni::child_process;
using msomni::testing::json;
using msomni::testing::parse_json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::stop_scheduler;
using msomni::testing::temp_dir;

using msomni::testing::count_of;

namespace {

// msomni-sched on 8 GPUs with its info file in `dir`; by default no run window (so a young
// regular job may be preempted) and a short drain. Waits until it listens.
std::unique_ptr<child_process> start_scheduler(const temp_dir& dir,
                                               std::vector<std::string> policy = {"--min-run-window-s", "0",
                                                                                  "--drain-s", "20"}) {
  return msomni::testing::start_scheduler(dir, 8, policy);
}

// `steps` lines of msomni-run's metrics.jsonl from step `first`: steps of `step_ms`, `wait_ms`
// of each waiting for data.
std::string metrics_lines(int steps, double wait_ms, double step_ms = 1000, int first = 1) {
  std::string lines;
  for (int i = first; i < first + steps; ++i)
    lines += json{{"step", i}, {"step_time_ms", step_ms}, {"data_wait_ms", wait_ms}}.dump() + "\n";
  return lines;
}

// A critical job on all 8 GPUs whose command appends `metrics` (msomni-run's metrics.jsonl
// lines) to its run directory, runs `then` (shell commands; $METRICS is that file), then
// trains on for `seconds`; waits until it has started.
std::unique_ptr<child_process> start_critical_writing(const temp_dir& dir, const std::string& metrics, int seconds,
                                                      const std::string& then = "") {
  const auto run_dir = dir.path() / "crit-run";
  std::filesystem::create_directories(run_dir);
  const std::string steps = dir.write("steps", metrics);
  auto crit = std::make_unique<child_process>(
      MSOMNI_CLI_BINARY,
      std::vector<std::string>{"job", "--scheduler-info", (dir.path() / "info").string(), "--id", "crit", "--class",
                               "critical", "--gpus", "8", "--run-dir", run_dir.string(), "--", "sh", "-c",
                               "METRICS=" + (run_dir / "metrics.jsonl").string() + "; cat " + steps +
                                   " >> \"$METRICS\"; " + then + "exec sleep " + std::to_string(seconds)});
  REQUIRE_MESSAGE(crit->read_until("msomni job crit: started", 20s), crit->log);
  return crit;
}

}  // namespace

TEST_CASE("msomni-sched over UCX: a critical job preempts a regular job that releases and resumes") {
  temp_dir dir;
  auto sched = start_scheduler(dir);
  const std::string info = (dir.path() / "info").string();
  struct stat st {};
  REQUIRE(::stat(info.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  // The regular job's command writes a scratch file, logs each start and its SIGTERM, then
  // works for 4 s.
  const std::string runs = (dir.path() / "reg.runs").string();
  const auto scratch = dir.path() / "scratch";
  child_process reg(MSOMNI_CLI_BINARY,
                    {"job", "--scheduler-info", info, "--id", "reg", "--class", "regular", "--gpus", "8",
                     "--scratch-dir", scratch.string(), "--", "sh", "-c",
                     "echo partial > \"$MSOMNI_SCRATCH_DIR/activations.bin\" && echo \"run gpus=$MSOMNI_JOB_GPUS\" >> " +
                         runs + "; trap 'echo term >> " + runs + "; kill $!; exit 0' TERM; sleep 4 & wait"});
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: started", 20s), reg.log);
  // The service's queue and jobs are visible to a token holder.
  const auto busy = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info);
  CHECK_MESSAGE(busy.exit_code == 0, busy.output);
  const auto status = parse_json(busy.output);
  CHECK(status.at("gpus_total") == 8);
  CHECK(status.at("gpus_free") == 0);
  CHECK(status.at("pending") == json{{"critical", 0}, {"regular", 0}, {"best_effort", 0}});
  CHECK(status.at("queue_capacity") == 1024);
  CHECK(status.at("running") == 1);
  // Each job with its class, phase and GPUs.
  REQUIRE(status.at("jobs").size() == 1);
  auto row = status.at("jobs")[0];
  CHECK(row.at("for_s").is_number());
  row.erase("for_s");
  CHECK(row == json{{"job", "reg"}, {"class", "regular"}, {"phase", "running"}, {"gpus", 8}, {"replicas", 1},
                    {"borrowed", false}, {"host", ""}});
  CHECK(status.at("jobs_total") == 1);
  const auto table = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --scheduler-info " + info);
  CHECK_MESSAGE(table.output.find("\nreg                  regular      running      8         1  ") != std::string::npos,
                table.output);
  const auto crit = run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                                " --id crit --class critical --gpus 8 -- sh -c 'echo crit-ran'");
  CHECK_MESSAGE(crit.exit_code == 0, crit.output);
  CHECK(crit.output.find("crit-ran") != std::string::npos);
  CHECK(crit.output.find("msomni job crit: finished") != std::string::npos);
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: finished", 30s), reg.log);
  CHECK(reg.wait(10s) == 0);
  CHECK(reg.log.find("preempted: checkpoint and release within 20 s (make room for critical job crit (") != std::string::npos);
  CHECK(reg.log.find("released its GPUs") != std::string::npos);
  CHECK(count_of(reg.log, "msomni job reg: started") == 2);
  const std::string r = read_text(runs);
  CHECK(count_of(r, "run gpus=0,1,2,3,4,5,6,7") == 2);
  CHECK(count_of(r, "term") == 1);
  // No scratch left behind, neither by the preempted run nor by the finished one.
  CHECK(count_of(reg.log, "removed its scratch directory (1 files)") == 2);
  CHECK_FALSE(std::filesystem::exists(scratch / "reg"));
  const auto idle = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --scheduler-info " + info);
  CHECK_MESSAGE(idle.exit_code == 0, idle.output);
  CHECK(idle.output.find("GPUs 8 free of 8") != std::string::npos);
  CHECK(idle.output.find("queue   0 of 1024") != std::string::npos);
  CHECK(idle.output.find("running 0 (borrowed 0), draining 0") != std::string::npos);
  CHECK(idle.output.find("JOB ") == std::string::npos);  // no jobs: no table
  // The scheduler printed each decision with its reason, in order.
  ::kill(sched->pid(), SIGTERM);
  CHECK(sched->read_until("msomni-sched: stopped", 10s));
  CHECK(sched->wait(10s) == 0);
  const auto& log = sched->log;
  const auto pre = log.find("preempt reg drain=20s: make room for critical job crit");
  const auto cstart = log.find("start crit gpus=8");
  REQUIRE(pre != std::string::npos);
  REQUIRE(cstart != std::string::npos);
  CHECK(pre < cstart);
  CHECK(count_of(log, "start reg gpus=8") == 2);
}

TEST_CASE("msomni-sched over UCX: a critical job's metrics feed the predictor and a best-effort job is co-located") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--reservation-window-s", "1"});
  const std::string info = (dir.path() / "info").string();
  // The critical command writes 40 steps as msomni-run does (1 s steps, half of each waiting
  // for data: idle share 0.5), then trains on for a while.
  const std::string lines = metrics_lines(40, 500);
  auto crit = start_critical_writing(dir, lines, 6);
  const auto guest = run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                                 " --id be --class best-effort --gpus 2 -- sh -c 'echo \"guest of $MSOMNI_JOB_HOST share $MSOMNI_JOB_SHARE\"'");
  CHECK_MESSAGE(guest.exit_code == 0, guest.output);
  CHECK(guest.output.find("started as a guest of crit") != std::string::npos);
  CHECK(guest.output.find("guest of crit share 0.") != std::string::npos);
  CHECK(crit->read_until("msomni job crit: finished", 20s));
  stop_scheduler(*sched);
  CHECK(sched->log.find("colocate be gpus=2: host's predicted idle share passes the threshold") != std::string::npos);
}

TEST_CASE("msomni-sched over UCX: checkpoint phases in a critical job's metrics lift its idle share past the threshold") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--reservation-window-s", "1"});
  const std::string info = (dir.path() / "info").string();
  // 1 s steps that wait 0.2 s for data (idle share 0.2, below the 35% threshold), and after
  // every 4th update the rank stands still for a 1.5 s checkpoint: over its rhythm the GPUs
  // are idle (4 x 0.2 + 1.5) / (4 + 1.5) = 42% of the time. Without the checkpoint phases
  // the predictor would see 20% and no guest would be placed (all 8 GPUs are the critical job's).
  std::string lines;
  for (int i = 1; i <= 60; ++i)
    lines += json{{"step", i}, {"step_time_ms", 1000.0}, {"data_wait_ms", 200.0}, {"checkpoint_ms", i % 4 == 0 ? 1500.0 : 0.0}}
                 .dump() + "\n";
  auto crit = start_critical_writing(dir, lines, 8);
  child_process guest(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "be", "--class", "best-effort",
                                          "--gpus", "2", "--", "true"});
  CHECK_MESSAGE(guest.read_until("msomni job be: started as a guest of crit", 20s), guest.log);
  CHECK(guest.wait(20s) == 0);
  CHECK(crit->read_until("msomni job crit: finished", 20s));
  stop_scheduler(*sched);
  CHECK(sched->log.find("colocate be gpus=2: host's predicted idle share passes the threshold") != std::string::npos);
}

namespace {

// A memory_advice line of msomni-run's events.jsonl: the forecast peak over the horizon, the
// safety margin and the device, in GB.
std::string advice_line(int step, double forecast_gb, double margin_gb, double device_gb) {
  return json{{"time_ms", 1},           {"event", "memory_advice"}, {"kind", "memory_advice"}, {"step", step},
              {"rank", "rank-0"},       {"action", "reserve"},      {"gb", forecast_gb + margin_gb},
              {"forecast_gb", forecast_gb}, {"margin_gb", margin_gb}, {"device_gb", device_gb},
              {"fits", true},           {"attempt", 1}}
             .dump() +
         "\n";
}

}  // namespace

TEST_CASE("msomni-sched over UCX: a guest is placed only where the host's memory forecast leaves it room, and is evicted when a new forecast needs the memory") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--reservation-window-s", "1"});
  const std::string info = (dir.path() / "info").string(), marker = (dir.path() / "guest-runs").string();
  // The critical job lends (idle share 0.5) and forecasts 40 + 3.5 GB of its 80 GB devices:
  // 36.5 GB of headroom. Once its guest runs, its forecast rises to 70 + 3.5 GB.
  const auto run_dir = dir.path() / "crit-run";
  std::filesystem::create_directories(run_dir);
  const std::string events = (run_dir / "events.jsonl").string();
  const std::string low = dir.write("advice-low", advice_line(1, 40, 3.5, 80));
  const std::string high = dir.write("advice-high", advice_line(41, 70, 3.5, 80));
  const std::string steps = dir.write("steps", metrics_lines(40, 500));
  child_process crit(MSOMNI_CLI_BINARY,
                     {"job", "--scheduler-info", info, "--id", "crit", "--class", "critical", "--gpus", "8", "--run-dir",
                      run_dir.string(), "--", "sh", "-c",
                      "cat " + low + " >> " + events + "; cat " + steps + " >> " + (run_dir / "metrics.jsonl").string() +
                          "; for i in $(seq 300); do [ -e " + marker + " ] && break; sleep 0.1; done; cat " + high +
                          " >> " + events + "; exec sleep 6"});
  REQUIRE_MESSAGE(crit.read_until("msomni job crit: started", 20s), crit.log);

  // Needs 50 GB as a guest: more than the headroom, so it waits for GPUs of its own.
  child_process big(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "big", "--class", "best-effort", "--gpus",
                                        "2", "--memory-gb", "50", "--", "sh", "-c", "echo host=$MSOMNI_JOB_HOST"});
  // Needs 20 GB: placed beside the critical job, then evicted by its new forecast.
  child_process small(MSOMNI_CLI_BINARY,
                      {"job", "--scheduler-info", info, "--id", "small", "--class", "best-effort", "--gpus", "2",
                       "--memory-gb", "20", "--", "sh", "-c",
                       "if [ -n \"$MSOMNI_JOB_HOST\" ]; then touch " + marker + "; exec sleep 60; fi"});
  REQUIRE_MESSAGE(small.read_until("msomni job small: started as a guest of crit", 30s), small.log);
  const auto evicted = small.read_until("msomni job small: evicted as a guest", 20s);
  REQUIRE_MESSAGE(evicted, small.log);
  CHECK(evicted->find("memory forecast leaves") != std::string::npos);
  CHECK(evicted->find("it needs 20") != std::string::npos);
  // Both run once the critical job is done, on GPUs of their own; the big one never as a guest.
  CHECK(small.wait(30s) == 0);
  CHECK(big.wait(30s) == 0);
  CHECK(count_of(small.log, "started as a guest of crit") == 1);
  CHECK(big.log.find("started as a guest") == std::string::npos);
  CHECK(crit.read_until("msomni job crit: finished", 20s));
  stop_scheduler(*sched);
  INFO(sched->log);
  CHECK(sched->log.find("colocate small gpus=2: host's predicted idle share passes the threshold: idle share 0.5 ") !=
        std::string::npos);
  CHECK(sched->log.find("; memory: the host's forecast leaves 36.50 GB of its 80.00 GB device, the guest needs 20.00 GB") !=
        std::string::npos);
  CHECK(sched->log.find("hold big: not placed as a guest: memory: crit's memory forecast leaves 36.50 GB of its 80.00 "
                        "GB device; it needs 50.00 GB as a guest") != std::string::npos);
  CHECK(sched->log.find("evict_guest small: memory: crit's memory forecast leaves 6.50 GB of its 80.00 GB device; it "
                        "needs 20.00 GB as a guest") != std::string::npos);
}

TEST_CASE("msomni-sched over UCX: a critical job its guest slows past the slowdown budget stops lending") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--reservation-window-s", "1"});
  const std::string info = (dir.path() / "info").string(), marker = (dir.path() / "guest-runs").string();
  // Alone: 1 s steps, 0.5 s of each waiting for data (idle share 0.5). Once its guest runs
  // (the guest's command leaves a marker, as its kernels would leave a trace on the GPUs)
  // each step computes 0.1 s longer: 40 steps lose 4 s, far past 1% of a few seconds' run.
  const std::string slowed = dir.write("slowed", metrics_lines(40, 500, 1100, 41));
  auto crit = start_critical_writing(dir, metrics_lines(40, 500), 8,
                                     "for i in $(seq 300); do [ -e " + marker + " ] && break; sleep 0.1; done; cat " +
                                         slowed + " >> \"$METRICS\"; ");
  // As a guest it marks the GPUs and runs on; started on GPUs of its own it just ends.
  child_process guest(MSOMNI_CLI_BINARY,
                      {"job", "--scheduler-info", info, "--id", "be", "--class", "best-effort", "--gpus", "2", "--", "sh",
                       "-c", "if [ -n \"$MSOMNI_JOB_HOST\" ]; then touch " + marker + "; exec sleep 60; fi"});
  CHECK_MESSAGE(guest.read_until("msomni job be: started as a guest of crit", 20s), guest.log);
  const auto evicted = guest.read_until("msomni job be: evicted as a guest", 20s);
  REQUIRE_MESSAGE(evicted, guest.log);
  CHECK(evicted->find("past its 1% slowdown budget") != std::string::npos);
  const auto status = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info);
  CHECK_MESSAGE(parse_json(status.output).at("budget_holds") == 1, status.output);
  // It waits until the critical job is done (no second guest run), then runs alone.
  CHECK(guest.wait(30s) == 0);
  CHECK(count_of(guest.log, "started as a guest of crit") == 1);
  CHECK(crit->read_until("msomni job crit: finished", 20s));
  stop_scheduler(*sched);
  CHECK(sched->log.find("evict_guest be: crit lost ") != std::string::npos);
}

TEST_CASE("msomni-sched restarted after a crash: a running job keeps running, rejoins on its GPUs and nothing is placed twice") {
  temp_dir dir;
  auto first = start_scheduler(dir);
  const std::string info = (dir.path() / "info").string();
  child_process reg(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "reg", "--class", "regular", "--gpus",
                                        "8", "--reconnect-s", "60", "--", "sh", "-c", "sleep 10; echo reg-done"});
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: started on gpus 0,1,2,3,4,5,6,7", 20s), reg.log);
  // A job in line behind it before the crash keeps its place after the restart.
  child_process early(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "early", "--class", "regular",
                                          "--gpus", "8", "--reconnect-s", "60", "--", "sh", "-c", "echo early-ran"});
  REQUIRE_MESSAGE(early.read_until("msomni job early: submitted", 20s), early.log);
  std::this_thread::sleep_for(2s);
  ::kill(first->pid(), SIGKILL);  // a crash: no goodbye
  first->wait(10s);
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: the scheduler went away: the command keeps running", 20s), reg.log);
  // The same info file: a restart. Nothing is placed for 3 s while jobs rejoin.
  auto second = start_scheduler(dir, {"--min-run-window-s", "0", "--recover-s", "3"});
  REQUIRE_MESSAGE(second->read_until("msomni-sched: restarted", 20s), second->log);
  CHECK(second->log.find("placing nothing for 3 s") != std::string::npos);
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: keeps gpus 0,1,2,3,4,5,6,7", 20s), reg.log);
  // A job submitted now waits for reg's GPUs instead of getting them a second time, and
  // behind early, which tells the new instance how long it has been in line.
  child_process next(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "next", "--class", "regular", "--gpus",
                                         "8", "--", "sh", "-c", "echo next-ran"});
  const auto again = early.read_until("msomni job early: submitted again to the restarted scheduler, in line since ", 20s);
  REQUIRE_MESSAGE(again, early.log);
  CHECK(std::stod(again->substr(again->find("in line since ") + 14)) >= 2.0);
  // Once the recovery period has ended, the new instance lists early as waiting since before
  // the crash, not since it submitted again.
  std::string status;
  json early_row;
  for (int i = 0; i < 40 && early_row.is_null(); ++i) {
    if (i) std::this_thread::sleep_for(250ms);
    status = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info).output;
    const auto parsed = json::parse(status, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("jobs"))
      for (const auto& j : parsed["jobs"])
        if (j.value("job", "") == "early") early_row = j;
  }
  REQUIRE_MESSAGE(early_row.is_object(), status);
  CHECK_MESSAGE(early_row.at("for_s").get<double>() >= 2.0, status);
  REQUIRE_MESSAGE(reg.read_until("msomni job reg: finished", 30s), reg.log);
  CHECK(reg.wait(10s) == 0);
  CHECK(reg.log.find("reg-done") != std::string::npos);  // the command ran through the restart
  REQUIRE_MESSAGE(next.read_until("msomni job next: finished", 20s), next.log);
  CHECK(next.wait(10s) == 0);
  CHECK(early.wait(10s) == 0);
  stop_scheduler(*second);
  CAPTURE(second->log);
  const auto adopted = second->log.find("adopted reg gpus=8: rejoined after a scheduler restart: keeps its GPUs");
  const auto early_start = second->log.find("start early gpus=8"), next_start = second->log.find("start next gpus=8");
  CHECK(adopted != std::string::npos);
  REQUIRE(early_start != std::string::npos);
  REQUIRE(next_start != std::string::npos);
  CHECK(next_start > adopted);
  CHECK(early_start < next_start);  // its place in line survived the restart
  CHECK(second->log.find("start reg") == std::string::npos);  // reg was never started again
}

TEST_CASE("msomni-sched restarted: a rejoining critical job reports its recent steps again so guests are placed at once") {
  temp_dir dir;
  auto first = start_scheduler(dir, {"--reservation-window-s", "1"});
  const std::string info = (dir.path() / "info").string();
  const std::string lines = metrics_lines(40, 500);  // idle share 0.5, written once: nothing new after the restart
  auto crit = start_critical_writing(dir, lines, 30);
  const std::vector<std::string> guest_args{"job", "--scheduler-info", info, "--id", "be", "--class", "best-effort",
                                            "--gpus", "2", "--", "true"};
  {  // the first instance has the steps: it places a guest
    child_process guest(MSOMNI_CLI_BINARY, guest_args);
    REQUIRE_MESSAGE(guest.read_until("msomni job be: started as a guest of crit", 20s), guest.log);
    CHECK(guest.wait(20s) == 0);
  }
  ::kill(first->pid(), SIGKILL);
  first->wait(10s);
  REQUIRE_MESSAGE(crit->read_until("msomni job crit: the scheduler went away", 20s), crit->log);
  auto second = start_scheduler(dir, {"--reservation-window-s", "1", "--recover-s", "1"});
  REQUIRE_MESSAGE(crit->read_until("msomni job crit: keeps gpus", 20s), crit->log);
  // The new instance never saw those steps but from the rejoin's replay: without it, its
  // predictor would know nothing of crit and the guest would wait for crit's end.
  child_process guest(MSOMNI_CLI_BINARY, guest_args);
  CHECK_MESSAGE(guest.read_until("msomni job be: started as a guest of crit", 20s), guest.log);
  CHECK(guest.wait(20s) == 0);
  stop_scheduler(*second);
}

TEST_CASE("msomni-sched restarted: a guest stops its run, submits again and is placed as a guest again") {
  temp_dir dir;
  auto first = start_scheduler(dir, {"--reservation-window-s", "1"});
  const std::string info = (dir.path() / "info").string();
  const std::string lines = metrics_lines(40, 500);
  auto crit = start_critical_writing(dir, lines, 30);
  child_process guest(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "be", "--class", "best-effort",
                                          "--gpus", "2", "--", "sh", "-c", "exec sleep 30"});
  REQUIRE_MESSAGE(guest.read_until("msomni job be: started as a guest of crit", 20s), guest.log);
  ::kill(first->pid(), SIGKILL);
  first->wait(10s);
  auto second = start_scheduler(dir, {"--reservation-window-s", "1", "--recover-s", "1"});
  // The guest's host forecast went with the old instance: its run stops, it queues again,
  // and the new instance (with crit's replayed steps) places it as crit's guest again.
  REQUIRE_MESSAGE(guest.read_until("msomni job be: stops its guest run", 20s), guest.log);
  REQUIRE_MESSAGE(guest.read_until("msomni job be: submitted again to the restarted scheduler", 20s), guest.log);
  CHECK_MESSAGE(guest.read_until("msomni job be: started as a guest of crit", 20s), guest.log);
  CHECK(crit->read_until("msomni job crit: rejoins the scheduler on gpus 0,1,2,3,4,5,6,7", 20s));
  stop_scheduler(*second);
  CAPTURE(second->log);
  CHECK(second->log.find("adopted crit gpus=8") != std::string::npos);
  CHECK(second->log.find("colocate be gpus=2") != std::string::npos);
}

TEST_CASE("msomni job: a scheduler that does not come back within --reconnect-s stops the command and ends the job") {
  temp_dir dir;
  auto sched = start_scheduler(dir);
  const std::string info = (dir.path() / "info").string();
  child_process job(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "j", "--class", "regular", "--gpus",
                                        "1", "--reconnect-s", "2", "--", "sh", "-c",
                                        "trap 'echo got-term; kill $!; exit 0' TERM; sleep 60 & wait"});
  REQUIRE_MESSAGE(job.read_until("msomni job j: started", 20s), job.log);
  ::kill(sched->pid(), SIGKILL);
  sched->wait(10s);
  REQUIRE_MESSAGE(job.read_until("msomni job j: the scheduler went away and did not come back within 2 s", 20s),
                  job.log);
  CHECK(job.wait(10s) == 1);
  job.read_until("got-term", 2s);
  CHECK(job.log.find("got-term") != std::string::npos);  // the command was asked to stop, not left behind
}

// step -> its metrics record, the last line of each step (a resumed run appends to metrics.jsonl).
std::map<int, json> steps_of(const std::filesystem::path& metrics) {
  std::map<int, json> out;
  for (const auto& r : read_json_lines(metrics)) out[r.at("step").get<int>()] = r;
  return out;
}

// step -> loss (null plus its flag when not finite), the last line of each step.
std::map<int, json> losses(const std::filesystem::path& metrics) {
  std::map<int, json> out;
  for (const auto& [step, r] : steps_of(metrics)) out[step] = r.at("loss");
  return out;
}

TEST_CASE("msomni-run under msomni job: preempted by a critical job it checkpoints, resumes and matches an uninterrupted run") {
  temp_dir dir;
  const std::string cache = (dir.path() / "cache").string();
  ::setenv("MSOMNI_CACHE_DIR", cache.c_str(), 1);  // for the reference run and the job's command
  const std::string quickstart = std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml";
  const auto ref_dir = dir.path() / "ref";
  // Video downgrades follow live timing, so neither run may downgrade for their losses to match.
  const auto ref = run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart +
                               " --set training.steps=240 --set io.downgrade_video=false --run-dir " + ref_dir.string());
  REQUIRE_MESSAGE(ref.exit_code == 0, ref.output);

  auto sched = start_scheduler(dir);
  const std::string info = (dir.path() / "info").string();
  const auto run_dir = dir.path() / "run";
  child_process job(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "train", "--class", "regular", "--gpus",
                                        "8", "--run-dir", run_dir.string(), "--", MSOMNI_RUN_BINARY, quickstart, "--set",
                                        "training.steps=240", "--set", "io.downgrade_video=false", "--run-dir",
                                        run_dir.string()});
  REQUIRE_MESSAGE(job.read_until("msomni job train: started", 20s), job.log);
  // Preempt it mid-run: once 20 steps are in its metrics, a critical job arrives.
  for (int i = 0; i < 600 && losses(run_dir / "metrics.jsonl").size() < 20; ++i) std::this_thread::sleep_for(50ms);
  const auto crit = run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                                " --id crit --class critical --gpus 8 -- true");
  CHECK_MESSAGE(crit.exit_code == 0, crit.output);
  REQUIRE_MESSAGE(job.read_until("msomni job train: finished", 120s), job.log);
  CHECK(job.wait(10s) == 0);
  CAPTURE(job.log);
  CHECK(job.log.find("msomni job train: preempted") != std::string::npos);
  CHECK(job.log.find("stopped at step") != std::string::npos);  // msomni-run's final checkpoint
  CHECK(msomni::testing::has_reason_containing(read_json_lines(run_dir / "events.jsonl"),
                                              "warmed up with checkpoint step"));  // the resume
  const auto released = job.log.find("released its GPUs");
  REQUIRE(released != std::string::npos);
  CHECK(job.log.find("checkpoint step 0)") == std::string::npos);  // it reported a real step
  // Same losses, step by step, as the run nobody interrupted.
  const auto got = losses(run_dir / "metrics.jsonl"), want = losses(ref_dir / "metrics.jsonl");
  CHECK(want.size() == 240);
  CHECK(got == want);
  // Each line carries the time the rank stood still for a checkpoint after that step: more
  // than nothing at the checkpoint steps (every 100 and the last), which msomni job passes
  // on to the predictor as the job's checkpoint phases.
  const auto ref_steps = steps_of(ref_dir / "metrics.jsonl");
  for (const int step : {100, 200, 240}) {
    REQUIRE(ref_steps.count(step) == 1);
    CHECK_MESSAGE(ref_steps.at(step).at("checkpoint_ms").get<double>() > 0, "step " << step);
  }
  stop_scheduler(*sched);
}

TEST_CASE("msomni-run under msomni job --resize-in-place: a critical job shrinks it at a barrier without a restart and it grows back") {
  temp_dir dir;
  const std::string cache = (dir.path() / "cache").string();
  ::setenv("MSOMNI_CACHE_DIR", cache.c_str(), 1);
  const std::string quickstart = std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml";
  // The default 2 h run window: the regular job is shrunk, not preempted. No critical
  // reserve, so that it may grow back onto the GPUs the critical job leaves.
  const std::string config = dir.write("sched.toml", "[scheduler]\ncritical_peak_memory_s = 0\n");
  auto sched = start_scheduler(dir, {"--config", config, "--drain-s", "60"});
  const std::string info = (dir.path() / "info").string();
  const auto run_dir = dir.path() / "run";
  child_process train(MSOMNI_CLI_BINARY,
                      {"job", "--scheduler-info", info, "--id", "train", "--class", "regular", "--gpus", "8",
                       "--gpus-per-replica", "4", "--min-replicas", "1", "--run-dir", run_dir.string(),
                       "--resize-in-place", "yes", "--", MSOMNI_RUN_BINARY, quickstart, "--set", "training.steps=1000",
                       "--run-dir", run_dir.string()});
  REQUIRE_MESSAGE(train.read_until("msomni job train: started on gpus 0,1,2,3,4,5,6,7", 20s), train.log);
  for (int i = 0; i < 600 && losses(run_dir / "metrics.jsonl").size() < 20; ++i) std::this_thread::sleep_for(50ms);
  child_process crit(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "crit", "--class", "critical",
                                         "--gpus", "4", "--", "sh", "-c", "sleep 3"});
  REQUIRE_MESSAGE(train.read_until("msomni job train: shrunk in place to 1 replicas", 60s), train.log);
  REQUIRE_MESSAGE(crit.read_until("msomni job crit: started", 30s), crit.log);
  REQUIRE_MESSAGE(crit.read_until("msomni job crit: finished", 30s), crit.log);
  REQUIRE_MESSAGE(train.read_until("msomni job train: grown in place to 2 replicas", 60s), train.log);
  REQUIRE_MESSAGE(train.read_until("msomni job train: finished", 120s), train.log);
  CHECK(train.wait(10s) == 0);
  CHECK(count_of(train.log, "msomni job train: started") == 1);  // never restarted
  // Every step once, at world size 2, then 1 while the critical job ran, then 2 again.
  const auto records = read_json_lines(run_dir / "metrics.jsonl");
  CHECK(losses(run_dir / "metrics.jsonl").size() == 1000);
  // The worlds in file order with repeats collapsed: 2, 1, 2 (maybe more shrinks and grows).
  std::vector<int> worlds;
  for (const auto& r : records)
    if (worlds.empty() || worlds.back() != r.at("world_size").get<int>()) worlds.push_back(r.at("world_size").get<int>());
  CAPTURE(worlds.size());
  REQUIRE(worlds.size() >= 3);
  CHECK(worlds[0] == 2);
  CHECK(worlds[1] == 1);
  CHECK(worlds[2] == 2);
  stop_scheduler(*sched);
  CAPTURE(sched->log);
  CHECK(sched->log.find("preempt train") != std::string::npos);
  CHECK(sched->log.find("resize train gpus=8") != std::string::npos);
}

TEST_CASE("msomni-sched: a job without the token cannot reach the scheduler") {
  temp_dir dir;
  auto sched = start_scheduler(dir);
  const std::string real = read_text(dir.path() / "info");
  const std::string address = real.substr(0, real.find(' '));
  const std::string forged = dir.write("forged", address + " 00000000000000000000000000000000\n");
  const auto r = run_command("timeout 4 " + std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + forged +
                             " --id intruder --class critical --gpus 1 -- true");
  CHECK(r.exit_code == 124);  // still waiting: its submit went nowhere
  stop_scheduler(*sched);
  CHECK(sched->log.find("intruder") == std::string::npos);
}

TEST_CASE("msomni-sched reads its policy from a TOML [scheduler] table and refuses a bad one before starting") {
  temp_dir dir;
  child_process sched(MSOMNI_SCHED_BINARY,
                      {"--config", std::string(MSOMNI_SOURCE_DIR) + "/configs/scheduler/cluster-sched.toml", "--gpus", "16",
                       "--policy", "greedy", "--info-file", (dir.path() / "info").string()});
  const auto line = sched.read_until("msomni-sched: 16 GPUs", 20s);
  REQUIRE_MESSAGE(line, sched.log);
  CHECK(line->find("policy greedy") != std::string::npos);  // the flag overrides the file's omni
  CHECK(line->find("slowdown budget 1%") != std::string::npos);
  ::kill(sched.pid(), SIGTERM);
  CHECK(sched.wait(10s) == 0);
  const std::string budget = dir.write("budget.toml", "[scheduler]\ncritical_slowdown_budget = 0.025\n");
  child_process strict(MSOMNI_SCHED_BINARY, {"--config", budget, "--info-file", (dir.path() / "info2").string()});
  const auto strict_line = strict.read_until("msomni-sched: 8 GPUs", 20s);
  REQUIRE_MESSAGE(strict_line, strict.log);
  CHECK(strict_line->find("policy omni (idle threshold 0.35, slowdown budget 2.5%)") != std::string::npos);
  ::kill(strict.pid(), SIGTERM);
  CHECK(strict.wait(10s) == 0);
  const std::string bad = dir.write("bad.toml", "[scheduler]\nidle_treshold = 0.4\npolicy = \"fastest\"\n");
  const auto r = run_command(std::string(MSOMNI_SCHED_BINARY) + " --config " + bad + " --info-file " +
                             (dir.path() / "never").string());
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("nothing was started") != std::string::npos);
  CHECK(r.output.find(bad + ":2:1: scheduler.idle_treshold") != std::string::npos);
  CHECK(r.output.find(bad + ":3:") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "never"));
  const std::string other = dir.write("job.toml", "[scheduler]\n[model]\nname = \"x\"\n");
  CHECK(run_command(std::string(MSOMNI_SCHED_BINARY) + " --config " + other).exit_code == 2);
}

TEST_CASE("msomni-sched and msomni job refuse bad arguments with exit code 2") {
  CHECK(run_command(std::string(MSOMNI_SCHED_BINARY) + " --gpus 0").exit_code == 2);
  CHECK(run_command(std::string(MSOMNI_SCHED_BINARY) + " --policy fastest").exit_code == 2);
  CHECK(run_command(std::string(MSOMNI_SCHED_BINARY) + " --bogus 1").exit_code == 2);
  CHECK(run_command(std::string(MSOMNI_SCHED_BINARY) + " --critical-slowdown-budget 1.5").exit_code == 2);
  temp_dir dir;
  const std::string info = dir.write("info", "not-an-info-file");
  const auto no_cmd = run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info + " --id a --gpus 1");
  CHECK(no_cmd.exit_code == 2);
  CHECK(no_cmd.output.find("a command after --") != std::string::npos);
  const auto bad_info = run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                                    " --id a --gpus 1 -- true");
  CHECK(bad_info.exit_code == 2);
  CHECK(bad_info.output.find("expected \"ADDRESS TOKEN\"") != std::string::npos);
  CHECK(run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                    " --id a --class urgent --gpus 1 -- true").exit_code == 2);
  CHECK(run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                    " --id a --gpus 1 --resize-in-place maybe -- true").exit_code == 2);
  CHECK(run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                    " --id a --gpus 1 --reconnect-s -1 -- true").exit_code == 2);
  CHECK(run_command(std::string(MSOMNI_SCHED_BINARY) + " --recover-s -5").exit_code == 2);
}
