// The programs' command lines as a user meets them: --help exits 0 and documents every
// flag; a bad value (negative for an unsigned count, not a number, out of range) exits 2
// and the message names the flag; a flag that sets a config key has the schema's range.
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
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
  check_help(cli + " health-check", {"CONFIG", "--set", "--json", "--level", "--run-dir", "Exit 0"});
}

namespace {

namespace fs = std::filesystem;

const fs::path source_root = fs::path(__FILE__).parent_path().parent_path().parent_path();
const fs::path build_root = fs::path(MSOMNI_RUN_BINARY).parent_path().parent_path().parent_path();

// Every flag a parser in `source` accepts: the string literals that are a whole option name
// ("--json", "-o,--out"), as CLI11's add_option/add_flag calls spell them.
std::set<std::string> flags_in(const fs::path& source) {
  const std::string text = msomni::testing::read_text(source);
  static const std::regex flag_literal("\"(?:-[A-Za-z],)?(--[a-z][a-z0-9-]*)\"");
  std::set<std::string> flags;
  for (std::sregex_iterator it(text.begin(), text.end(), flag_literal), end; it != end; ++it) flags.insert((*it)[1]);
  return flags;
}

// The --help of each command line in `commands` exits 0; together they name every flag of `source`.
void check_help_covers(const std::vector<std::string>& commands, const fs::path& source) {
  CAPTURE(source.string());
  REQUIRE(fs::exists(source));
  std::string helps;
  for (const auto& c : commands) {
    const auto r = run_command("timeout 30 " + c + " --help 2>/dev/null");
    CAPTURE(c);
    CHECK(r.exit_code == 0);
    CHECK(has(r.output, "Usage:"));
    helps += r.output;
  }
  const auto flags = flags_in(source);
  CHECK(!flags.empty());
  for (const auto& f : flags) {
    CAPTURE(f);
    CHECK(has(helps, f));
  }
}

// The commands `msomni --help` lists, in its Subcommands section.
std::vector<std::string> msomni_commands(const std::string& cli) {
  const auto r = run_command(cli + " --help 2>/dev/null");
  std::vector<std::string> names;
  std::istringstream lines(r.output.substr(std::min(r.output.size(), r.output.find("Subcommands:"))));
  std::string line;
  std::getline(lines, line);
  static const std::regex entry("^  ([a-z][a-z-]*)\\s");
  std::smatch m;
  while (std::getline(lines, line))
    if (std::regex_search(line, m, entry)) names.push_back(m[1]);
  return names;
}

}  // namespace

TEST_CASE("command line: every msomni subcommand and every program documents every flag its parser accepts") {
  const std::string cli = MSOMNI_CLI_BINARY;
  const auto commands = msomni_commands(cli);
  CAPTURE(commands.size());
  for (const char* expected : {"ckpt", "status", "scale-down", "scale-up", "stop", "job", "sched-status", "dataset",
                               "health-check"})
    CHECK(std::find(commands.begin(), commands.end(), expected) != commands.end());
  const fs::path cli_sources = source_root / "apps" / "msomni";
  const std::set<std::string> control_verbs{"status", "scale-down", "scale-up", "stop"};
  for (const auto& c : commands) {
    if (control_verbs.count(c)) continue;  // one parser for all four, below
    // A subcommand's parser lives in apps/msomni/NAME_command.cpp (dashes as underscores).
    std::string file = c;
    std::replace(file.begin(), file.end(), '-', '_');
    std::vector<std::string> lines{cli + " " + c};
    if (c == "ckpt")
      for (const char* verb : {"ls", "verify", "export"}) lines.push_back(cli + " ckpt " + verb);
    if (c == "dataset")
      for (const char* verb : {"pack", "check"}) lines.push_back(cli + " dataset " + verb);
    check_help_covers(lines, cli_sources / (file + "_command.cpp"));
  }
  std::vector<std::string> verbs;
  for (const auto& v : control_verbs) verbs.push_back(cli + " " + v);
  check_help_covers(verbs, cli_sources / "control_command.cpp");

  const std::pair<fs::path, fs::path> programs[] = {
      {MSOMNI_RUN_BINARY, "apps/msomni-run/run_options.cpp"},
      {build_root / "apps" / "msomni-rank" / "msomni-rank", "apps/msomni-rank/main.cpp"},
      {MSOMNI_AGENT_BINARY, "apps/msomni-agent/main.cpp"},
      {MSOMNI_SCHED_BINARY, "apps/msomni-sched/sched_flags.cpp"},
      {build_root / "tools" / "sim" / "msomni-sim", "tools/sim/sim_cli.cpp"},
      {build_root / "tools" / "dataset_gen" / "msomni-gen-dataset", "tools/dataset_gen/main.cpp"},
  };
  for (const auto& [binary, source] : programs) {
    CAPTURE(binary.string());
    REQUIRE(fs::exists(binary));
    check_help_covers({binary.string()}, source_root / source);
  }
}

TEST_CASE("command line: the flag scan finds a flag that --help leaves out") {
  // A parser whose flag is hidden from --help must fail the check above: the scan sees it.
  msomni::testing::temp_dir dir;
  const std::string source = dir.write("hidden.cpp", "app.add_flag(\"--json\", json, \"\")->group(\"\");\n"
                                                      "app.add_option(\"-o,--out\", out, \"the file\");\n");
  CHECK(flags_in(source) == std::set<std::string>{"--json", "--out"});
}

TEST_CASE("command line: msomni-sim --compare runs the three policies on one trace into one table") {
  const std::string sim = (build_root / "tools" / "sim" / "msomni-sim").string();
  const std::string trace = (source_root / "tests" / "scheduler" / "traces" / "itp" / "cluster01.csv").string();
  const auto table = run_command("timeout 120 " + sim + " --compare --trace " + trace + " 2>/dev/null");
  INFO(table.output);
  REQUIRE(table.exit_code == 0);
  std::istringstream lines(table.output);
  std::string line;
  bool header = false;
  size_t rows = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (w == std::vector<std::string>{"omni", "exclusive", "greedy"}) header = true;
    for (const char* row : {"allocated utilisation", "critical slowdown (mean)", "critical queue wait (mean s)",
                            "preemptions", "co-locations"})
      if (line.rfind(row, 0) == 0) ++rows;
  }
  CHECK(header);
  CHECK(rows == 5);
  CHECK(has(table.output, "invariants hold in every run"));
  const auto json = run_command("timeout 120 " + sim + " --compare --json --trace " + trace + " 2>/dev/null");
  REQUIRE(json.exit_code == 0);
  for (const char* policy : {"\"omni\": {", "\"exclusive\": {", "\"greedy\": {"}) CHECK(has(json.output, policy));
  check_usage_error(sim + " --compare --policy greedy --trace " + trace, "--policy excludes --compare");
  check_usage_error(sim + " --json --trace " + trace, "--json requires --compare");
}
