// msomni-run argument parsing.
#include "run_options.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <vector>

using msomni::apps::parse_run_options;
using msomni::apps::run_options;

namespace {
struct parsed {
  std::optional<int> exit_code;  // nullopt: the command line is good, run
  run_options options;
  std::string out, err;
};

parsed parse(std::vector<const char*> args) {
  args.insert(args.begin(), "msomni-run");
  parsed p;
  std::ostringstream out, err;
  p.exit_code = parse_run_options(static_cast<int>(args.size()), args.data(), p.options, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
}  // namespace

TEST_CASE("flags, repeated --set and both value spellings parse") {
  const auto p = parse({"job.toml", "--set", "a.b=1", "--set=c.d=x", "--dry-run", "--run-dir=/tmp/r", "--fresh",
                        "--log-level", "debug"});
  REQUIRE_FALSE(p.exit_code);
  const auto& o = p.options;
  CHECK(o.config_path == "job.toml");
  CHECK(o.overrides == std::vector<std::string>{"a.b=1", "c.d=x"});
  CHECK(o.dry_run);
  CHECK(o.fresh);
  CHECK(o.run_dir == "/tmp/r");
  CHECK(o.log_level == "debug");
  // One value per --set: the config may follow it.
  const auto after = parse({"--set", "a.b=1", "job.toml"});
  REQUIRE_FALSE(after.exit_code);
  CHECK(after.options.config_path == "job.toml");
  CHECK(after.options.overrides == std::vector<std::string>{"a.b=1"});
}

TEST_CASE("usage errors exit with 2 and name what is wrong") {
  const auto none = parse({});
  CHECK(none.exit_code == 2);
  CHECK(has(none.err, "CONFIG.toml"));
  const auto two = parse({"a.toml", "b.toml"});
  CHECK(two.exit_code == 2);
  CHECK(has(two.err, "b.toml"));
  const auto no_value = parse({"a.toml", "--set"});
  CHECK(no_value.exit_code == 2);
  CHECK(has(no_value.err, "--set"));
  const auto unknown = parse({"a.toml", "--turbo"});
  CHECK(unknown.exit_code == 2);
  CHECK(has(unknown.err, "--turbo"));
  const auto level = parse({"a.toml", "--log-level", "loud"});
  CHECK(level.exit_code == 2);
  CHECK(has(level.err, "--log-level"));
  CHECK(has(level.err, "unknown level \"loud\""));
  for (const auto& p : {none, two, no_value, unknown, level}) {
    CHECK(has(p.err, "msomni-run: "));
    CHECK(p.out.empty());
  }
}

TEST_CASE("--help and --version exit with 0 without a config, and the help documents every flag") {
  const auto help = parse({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.err.empty());
  for (const char* flag : {"CONFIG.toml", "--set", "--dry-run", "--run-dir", "--fresh", "--log-level", "--version",
                           "--help", "exit codes"})
    CHECK_MESSAGE(has(help.out, flag), flag);
  // Every exit code msomni-run has, 0 to 6, with its meaning.
  for (const char* code : {"0 success", "1 runtime failure", "2 configuration or usage error", "3 a failed pre-flight",
                           "4 preempted", "5 stopped", "6 deposed"})
    CHECK_MESSAGE(has(help.out, code), code);
  const auto version = parse({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(has(version.out, "msomni-run 0.1.0"));
}
