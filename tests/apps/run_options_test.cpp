// msomni-run argument parsing.
#include "run_options.hpp"

#include <doctest/doctest.h>

#include <vector>

using msomni::apps::parse_run_options;

namespace {
std::optional<msomni::apps::run_options> parse(std::vector<const char*> args, std::string& err) {
  args.insert(args.begin(), "msomni-run");
  return parse_run_options(static_cast<int>(args.size()), args.data(), err);
}
}  // namespace

TEST_CASE("flags, repeated --set and both value spellings parse") {
  std::string err;
  auto o = parse({"job.toml", "--set", "a.b=1", "--set=c.d=x", "--dry-run", "--run-dir=/tmp/r",
                  "--fresh", "--log-level", "debug"},
                 err);
  REQUIRE(o);
  CHECK(o->config_path == "job.toml");
  CHECK(o->overrides == std::vector<std::string>{"a.b=1", "c.d=x"});
  CHECK(o->dry_run);
  CHECK(o->fresh);
  CHECK(o->run_dir == "/tmp/r");
  CHECK(o->log_level == "debug");
}

TEST_CASE("usage errors are refused with a reason") {
  std::string err;
  CHECK_FALSE(parse({}, err));
  CHECK(err == "missing CONFIG.toml");
  CHECK_FALSE(parse({"a.toml", "b.toml"}, err));
  CHECK(err.find("unexpected argument b.toml") == 0);
  CHECK_FALSE(parse({"a.toml", "--set"}, err));
  CHECK(err == "--set needs a value");
  CHECK_FALSE(parse({"a.toml", "--turbo"}, err));
  CHECK(err == "unknown option --turbo");
  CHECK_FALSE(parse({"a.toml", "--log-level", "loud"}, err));
  CHECK(parse({"--help"}, err));
}

TEST_CASE("the help text documents every flag") {
  const auto usage = msomni::apps::run_usage();
  for (const char* flag : {"--set", "--dry-run", "--run-dir", "--fresh", "--log-level", "--version",
                           "--help", "exit codes"})
    CHECK(usage.find(flag) != std::string::npos);
}
