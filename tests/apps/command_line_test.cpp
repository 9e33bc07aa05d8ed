// The programs' command lines as a user meets them: --help exits 0 and documents every
// flag; a bad value (negative for an unsigned count, not a number, out of range) exits 2
// and the message names the flag; a flag that sets a config key has the schema's range.
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using msomni::testing::run_command;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Runs `command` and checks that it exits 2 with `what` in its output. A command line that
// is wrongly accepted starts the program (msomni-sched would serve until stopped), so the
// run is bounded: that then fails here with exit 124 instead of hanging the test.
void check_usage_error(const std::string& command, const std::string& what) {
  const auto r = run_command("timeout 30 " + command + " 2>&1");
  CAPTURE(command);
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK(has(r.output, what));
}

// `binary args` exits 2 with "PROGRAM: FLAG: why" in its output.
void check_refused(const std::string& binary, const std::string& program, const std::string& args,
                   const std::string& flag) {
  check_usage_error(binary + " " + args, program + ": " + flag + ": ");
}

// `command --help` exits 0 and its output (stdout) names each of `flags`.
void check_help(const std::string& command, const std::vector<std::string>& flags) {
  const auto r = run_command("timeout 30 " + command + " --help 2>/dev/null");
  CAPTURE(command);
  CHECK(r.exit_code == 0);
  for (const auto& f : flags) {
    CAPTURE(f);
    CHECK(has(r.output, f));
  }
}

}  // namespace

TEST_CASE("command line: msomni-sched refuses bad values naming the flag and documents every flag") {
  const std::string sched = MSOMNI_SCHED_BINARY;
  check_refused(sched, "msomni-sched", "--gpus -1", "--gpus");
  check_refused(sched, "msomni-sched", "--gpus eight", "--gpus");
  check_refused(sched, "msomni-sched", "--gpus-per-node 0", "--gpus-per-node");
  check_refused(sched, "msomni-sched", "--queue-capacity -1", "--queue-capacity");
  check_refused(sched, "msomni-sched", "--listen 127.0.0.1:-1", "--listen");
  check_refused(sched, "msomni-sched", "--listen 127.0.0.1:65536", "--listen");
  check_refused(sched, "msomni-sched", "--listen localhost", "--listen");
  check_refused(sched, "msomni-sched", "--idle-threshold nan", "--idle-threshold");
  check_refused(sched, "msomni-sched", "--recover-s -5", "--recover-s");
  check_refused(sched, "msomni-sched", "--policy fastest", "--policy");
  // The [scheduler] key and its flag share one limit: drain_period_s is at most a day.
  check_usage_error(sched + " --drain-s 86401", "--drain-s: 86401 is not in [0, 86400]");
  msomni::testing::temp_dir dir;
  const std::string file = dir.write("sched.toml", "[scheduler]\ndrain_period_s = 86401\n");
  check_usage_error(sched + " --config " + file, "scheduler.drain_period_s");
  check_usage_error(sched + " --config " + file, "86400");
  check_help(sched, {"--config", "--gpus", "--gpus-per-node", "--nodes-per-switch", "--policy", "--idle-threshold",
                     "--drain-s", "--min-run-window-s", "--reservation-window-s", "--queue-capacity",
                     "--critical-slowdown-budget", "--listen", "--info-file", "--recover-s", "--metrics-port",
                     "--metrics-host", "--help", "Exit codes"});
}

TEST_CASE("command line: msomni-run refuses bad values naming the flag and documents every flag") {
  const std::string run = MSOMNI_RUN_BINARY;
  check_refused(run, "msomni-run", "job.toml --log-level loud", "--log-level");
  check_usage_error(run, "CONFIG.toml");
  check_usage_error(run + " job.toml --turbo", "--turbo");
  check_help(run, {"CONFIG.toml", "--set", "--dry-run", "--run-dir", "--fresh", "--log-level", "--version", "--help",
                   "exit codes"});
  const auto version = run_command(run + " --version");
  CHECK(version.exit_code == 0);
  CHECK(has(version.output, "msomni-run 0.1.0"));
}

TEST_CASE("command line: msomni's subcommands refuse bad values naming the flag and document every flag") {
  const std::string cli = MSOMNI_CLI_BINARY;
  msomni::testing::temp_dir dir;
  const std::string run_dir = dir.path().string();
  // --replicas sets elasticity.replicas, so it has that key's range.
  check_refused(cli, "msomni scale-down", "scale-down --run-dir " + run_dir + " --replicas -1", "--replicas");
  check_refused(cli, "msomni scale-down", "scale-down --run-dir " + run_dir + " --replicas two", "--replicas");
  check_refused(cli, "msomni scale-up", "scale-up --run-dir " + run_dir + " --replicas 65537", "--replicas");
  check_refused(cli, "msomni scale-down", "scale-down --run-dir " + run_dir + " --replicas 2 --grace-period 25h",
                "--grace-period");
  check_refused(cli, "msomni scale-down", "scale-down --run-dir " + run_dir + " --replicas 2 --grace-period soon",
                "--grace-period");
  check_refused(cli, "msomni job", "job --scheduler-info x --id a --gpus -1 -- true", "--gpus");
  check_refused(cli, "msomni job", "job --scheduler-info x --id a --gpus 0 -- true", "--gpus");
  check_refused(cli, "msomni job", "job --scheduler-info x --id a --min-replicas 0 -- true", "--min-replicas");
  check_refused(cli, "msomni ckpt", "ckpt export " + run_dir + " --out w.safetensors --rank -1", "--rank");
  check_refused(cli, "msomni ckpt", "ckpt verify " + run_dir + " --step x", "--step");
  check_usage_error(cli + " status", "--run-dir");
  check_usage_error(cli + " frobnicate", "unknown command 'frobnicate'");
  check_help(cli, {"ckpt", "status", "scale-down", "scale-up", "stop", "job", "sched-status"});
  check_help(cli + " scale-down", {"--run-dir", "--replicas", "--grace-period", "--token", "--json"});
  check_help(cli + " status", {"--run-dir", "--token", "--json"});
  check_help(cli + " job", {"--scheduler-info", "--id", "--class", "--gpus", "--gpus-per-replica", "--min-replicas",
                            "--run-dir", "--scratch-dir", "--reconnect-s", "--resize-in-place", "COMMAND",
                            "Exit codes"});
  check_help(cli + " sched-status", {"--scheduler-info", "--json"});
  check_help(cli + " ckpt export", {"DIR", "--out", "--step", "--rank", "--prefix"});
}
