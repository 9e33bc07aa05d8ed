// A resume whose config changes what the checkpoint's state means is refused before any rank
// starts (exit 2, --dry-run too), naming each key where the config gives it; keys that may
// change on a resume are accepted and listed in the resume event. Real msomni-run runs; the
// first also keeps its pre-flight report (preflight.json and a "preflight" event).
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using msomni::testing::json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

std::string quickstart() { return std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml"; }

std::string run(const fs::path& run_dir, const std::string& args) {
  return std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --run-dir " + run_dir.string() + " " + args;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("an incompatible resume exits 2 before any rank starts and names the keys, a compatible one lists its changes") {
  msomni::testing::temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  const auto run_dir = dir.path() / "run";
  const auto first = run_command(run(run_dir, "--set training.steps=4"));
  CAPTURE(first.output);
  REQUIRE(first.exit_code == 0);
  // The pre-flight's report is kept in the run directory and journaled.
  const auto preflight = nlohmann::json::parse(read_text(run_dir / "preflight.json"));
  CHECK(preflight.at("level") == "quick");
  CHECK(preflight.at("verdict") != "fail");
  bool journaled = false;
  for (const auto& e : read_json_lines(run_dir / "events.jsonl"))
    if (e.at("kind") == "preflight") journaled = e.at("verdict") == preflight.at("verdict") && e.at("level") == "quick";
  CHECK(journaled);
  const auto events_before = read_text(run_dir / "events.jsonl");
  const auto log_before = read_text(run_dir / "logs" / "rank-0.log");

  // The width and the seed decide what the saved state means: refused, each at its --set.
  for (const auto* mode : {"--dry-run", ""}) {
    CAPTURE(mode);
    const auto r = run_command(run(run_dir, std::string(mode) + " --set training.steps=8 --set model.d_model=32 --set training.seed=99"));
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("cannot resume from the checkpoint at step 4") != std::string::npos);
    CHECK(r.output.find("nothing was started") != std::string::npos);
    CHECK(r.output.find("--set[2]:1:15: model.d_model: is 32 but the checkpoint at step 4 was written with ") !=
          std::string::npos);
    CHECK(r.output.find("training.seed: is 99 but") != std::string::npos);
    CHECK(r.output.find("training.steps") == std::string::npos);  // may change: not a reason
    CHECK(r.output.find("--fresh") != std::string::npos);
  }
  // No rank started and nothing was journaled.
  CHECK(read_text(run_dir / "events.jsonl") == events_before);
  CHECK(read_text(run_dir / "logs" / "rank-0.log") == log_before);

  // Steps and lr may change: the dry run says so and the resume event lists them by key.
  const auto dry = run_command(run(run_dir, "--dry-run --set training.steps=6 --set training.lr=0.0005"));
  CAPTURE(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(dry.output.find("resume:       from the checkpoint at step 4; changed keys accepted: ") != std::string::npos);
  const auto again = run_command(run(run_dir, "--set training.steps=6 --set training.lr=0.0005"));
  CAPTURE(again.output);
  REQUIRE(again.exit_code == 0);
  json resume;
  for (const auto& e : read_json_lines(run_dir / "events.jsonl"))
    if (e.at("kind") == "resume") resume = e;
  REQUIRE(resume.is_object());
  CHECK(resume.at("step") == 4);
  CHECK(resume.at("config_compared") == true);
  bool steps = false, lr = false;
  for (const auto& c : resume.at("config_changes")) {
    CHECK_FALSE(c.at("key").get<std::string>().rfind("model.", 0) == 0);
    if (c.at("key") == "training.steps") steps = c.at("saved") == "4" && c.at("now") == "6";
    if (c.at("key") == "training.lr") lr = c.at("now") == "0.0005";
  }
  CHECK(steps);
  CHECK(lr);
  CHECK(count_of(resume.at("reason").get<std::string>(), "config changes accepted: ") == 1);
}
