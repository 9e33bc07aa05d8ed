// msomni-sched explains itself, and best-effort work is stopped gently and completely: real
// msomni-sched and `msomni job` processes over UCX on loopback. A best-effort job's command
// (a shell script with a SIGTERM trap and grandchildren, one of which ignores SIGTERM) is
// preempted by a critical job: its trap runs within scheduler.best_effort_drain_s, before any
// SIGKILL, and no grandchild outlives it. A regular job held back by the critical reserve
// with GPUs free says so in the decision log, in `msomni job`'s output and in sched-status.
#include "support/text_and_pids.hpp"
#include "core/child_process.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/sched_service.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using msomni::child_process;
using msomni::testing::parse_json;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::start_scheduler;
using msomni::testing::stop_scheduler;
using msomni::testing::temp_dir;

using msomni::testing::count_of;
using msomni::testing::ends_within_10s;

namespace {


// True once `path` exists, within 20 s.
bool appears_within_20s(const std::filesystem::path& path) {
  for (int i = 0; i < 2000; ++i) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

pid_t pid_in(const std::filesystem::path& file) { return static_cast<pid_t>(std::stol(read_text(file))); }

std::unique_ptr<child_process> start_job(const temp_dir& dir, const std::string& id, const std::string& klass,
                                         uint32_t gpus, std::vector<std::string> command,
                                         std::vector<std::string> flags = {}) {
  std::vector<std::string> args{"job", "--scheduler-info", (dir.path() / "info").string(), "--id", id,
                                "--class", klass, "--gpus", std::to_string(gpus)};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return std::make_unique<child_process>(MSOMNI_CLI_BINARY, args);
}

}  // namespace

TEST_CASE("a best-effort job's SIGTERM trap runs before it is killed and no grandchild survives it") {
  temp_dir dir;
  auto sched = start_scheduler(dir, 2, {"--best-effort-drain-s", "30"});
  const auto d = dir.path();
  // The trap takes a second before it writes its file: with no drain period the command would
  // be killed first. One grandchild ignores SIGTERM: only the group's end stops it.
  const std::string script = dir.write(
      "be.sh", "trap 'sleep 1; echo trapped >> " + (d / "trapped").string() + "; exit 0' TERM INT\n" +
                   "(trap '' TERM; exec sleep 300) &\necho $! > " + (d / "stubborn.pid").string() + "\n" +
                   "sleep 300 &\necho $! > " + (d / "plain.pid").string() + "\n" +
                   "echo up >> " + (d / "ready").string() + "\nwait\n");
  auto be = start_job(dir, "be", "best-effort", 2, {"sh", script});
  REQUIRE_MESSAGE(be->read_until("msomni job be: started", 20s), be->log);
  REQUIRE(appears_within_20s(d / "ready"));
  const pid_t stubborn = pid_in(d / "stubborn.pid"), plain = pid_in(d / "plain.pid");

  auto crit = start_job(dir, "crit", "critical", 2, {"sleep", "3"});
  REQUIRE_MESSAGE(be->read_until("msomni job be: preempted", 20s), be->log);
  CHECK(be->log.find("within 30 s") != std::string::npos);
  REQUIRE_MESSAGE(be->read_until("msomni job be: released its GPUs (command ended with 0", 20s), be->log);
  CHECK(read_text(d / "trapped") == "trapped\n");  // the trap ran to its end
  CHECK(ends_within_10s(plain));
  CHECK(ends_within_10s(stubborn));  // ignored SIGTERM, killed with what was left of the group
  REQUIRE_MESSAGE(crit->read_until("msomni job crit: started", 20s), crit->log);
  // sched-status shows a running critical job with the share it lends (none yet).
  const auto status = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " +
                                  (d / "info").string());
  REQUIRE_MESSAGE(status.exit_code == 0, status.output);
  const auto s = parse_json(status.output);
  CHECK(s.at("best_effort_drain_s") == 30);
  bool crit_row = false;
  for (const auto& row : s.at("jobs"))
    if (row.at("job") == "crit" && row.at("phase") == "running") crit_row = row.contains("lendable_share");
  CHECK_MESSAGE(crit_row, status.output);
  CHECK(crit->wait(20s) == 0);

  // After the critical job the best-effort job runs again; interrupting `msomni job` (Ctrl-C)
  // passes SIGINT to its command's group: the trap runs the same way, nothing survives.
  REQUIRE_MESSAGE(be->read_until("msomni job be: started", 20s), be->log);
  REQUIRE(appears_within_20s(d / "ready"));
  for (int i = 0; i < 2000 && count_of(read_text(d / "ready"), "up") < 2; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(count_of(read_text(d / "ready"), "up") == 2);
  const pid_t stubborn2 = pid_in(d / "stubborn.pid");
  ::kill(be->pid(), SIGINT);
  CHECK(be->wait(30s) == 1);
  CHECK(count_of(read_text(d / "trapped"), "trapped") == 2);
  CHECK(ends_within_10s(stubborn2));
  stop_scheduler(*sched);
  CHECK(sched->log.find("preempt be drain=30s") != std::string::npos);
  CHECK(sched->log.find("force_release be") == std::string::npos);  // it released within the drain
  CHECK(sched->wait(10s) == 0);
}

TEST_CASE("sched-status shows the critical reserve holding back a regular job while GPUs are free") {
  temp_dir dir;
  const std::string config = dir.write("sched.toml", "[scheduler]\ncritical_reserve_factor = 1.0\n");
  auto sched = start_scheduler(dir, 4, {"--config", config});
  // A critical job on 2 GPUs comes and goes: its demand stays in the reserve for a week.
  auto crit = start_job(dir, "crit", "critical", 2, {"true"});
  CHECK_MESSAGE(crit->wait(20s) == 0, crit->log);
  // A regular job of 4 one-GPU replicas starts on the 2 beside the reserve and does not grow.
  auto reg = start_job(dir, "reg", "regular", 4, {"sleep", "300"}, {"--gpus-per-replica", "1"});
  REQUIRE_MESSAGE(reg->read_until("msomni job reg: started", 20s), reg->log);
  REQUIRE_MESSAGE(reg->read_until("msomni job reg: held: critical_reserve: 2 free GPUs are kept", 20s), reg->log);

  const std::string info = (dir.path() / "info").string();
  const auto json_status = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " + info);
  REQUIRE_MESSAGE(json_status.exit_code == 0, json_status.output);
  const auto s = parse_json(json_status.output);
  CHECK(s.at("gpus_free") == 2);
  CHECK(s.at("held").at("reason") == "critical_reserve");
  CHECK(s.at("held").at("job") == "reg");
  REQUIRE(s.at("jobs").size() == 1);
  const auto& row = s.at("jobs")[0];
  CHECK(row.at("gpus") == 2);
  CHECK(row.at("hold") == "critical_reserve");
  CHECK(row.at("hold_detail").get<std::string>().find("kept in the critical reserve (2 GPUs") != std::string::npos);
  const auto table = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --scheduler-info " + info);
  REQUIRE_MESSAGE(table.exit_code == 0, table.output);
  CHECK_MESSAGE(table.output.find("held    2 GPUs free (reg): critical_reserve: ") != std::string::npos, table.output);
  CHECK_MESSAGE(table.output.find("critical_reserve: 2 free GPUs are kept") != std::string::npos, table.output);

  ::kill(reg->pid(), SIGTERM);
  reg->wait(30s);
  stop_scheduler(*sched);
  // One line for the job and one for the cluster, not one per pass.
  CHECK_MESSAGE(count_of(sched->log, "hold reg: critical_reserve") == 1, sched->log);
  CHECK_MESSAGE(count_of(sched->log, "hold cluster: 2 GPUs free, reg does not grow: critical_reserve") == 1, sched->log);
  CHECK(sched->wait(10s) == 0);
}
