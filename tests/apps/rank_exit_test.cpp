// How a rank process ends, with real processes: msomni-run fails a run whose rank died by a
// signal after giving its result (journaled as rank_crashed, named in summary.json), and the
// rank's whole lifecycle, start to exit, runs clean under AddressSanitizer and UBSan (the
// `asan` preset's msomni-rank, which `make test` builds): no report, no crash, exit 0.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace fs = std::filesystem;
using msomni::testing::events_named;
using msomni::testing::parse_json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::temp_dir;

namespace {

// Two ranks of a tiny model on images and text from the synthetic sources, with checkpoints.
std::string job_text(int steps) {
  return "[job]\nname = \"rank-exit\"\n"
         "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\nd_ff = 32\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
         "[training]\nglobal_batch = 4\nmicro_batch = 2\nsteps = " +
         std::to_string(steps) +
         "\nseed = 3\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 2\nmax_replicas = 2\n"
         "[checkpoint]\ninterval_steps = 5\n";
}

std::string run_with_rank(const std::string& rank_binary, const fs::path& cfg, const fs::path& run_dir,
                          const std::string& env = "") {
  return env + " MSOMNI_RANK_BINARY='" + rank_binary + "' " + MSOMNI_RUN_BINARY + " " + cfg.string() + " --run-dir " +
         run_dir.string();
}

}  // namespace

TEST_CASE("a rank that dies by a signal after its result fails the run, journaled as rank_crashed") {
  temp_dir dir;
  const auto cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << job_text(6);
  // The rank msomni-run starts is this script: the real rank gives its result and leaves, then
  // the process msomni-run watches dies by SIGABRT, as a rank whose teardown broke would.
  const auto wrapper = dir.path() / "crashing-rank.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n'" << MSOMNI_RANK_BINARY_PATH << "' \"$@\"\nkill -ABRT $$\n";
  ::chmod(wrapper.c_str(), 0700);
  const auto run_dir = dir.path() / "run";
  const auto r = run_command(run_with_rank(wrapper.string(), cfg, run_dir));
  CAPTURE(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("after its result") != std::string::npos);
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(!events_named(events, "job_finished").empty());  // every step was trained
  CHECK(!events_named(events, "rank_crashed").empty());
  const auto summary = parse_json(read_text(run_dir / "summary.json"));
  CHECK(summary.at("state") == "failed");
  CHECK(summary.at("exit_code") == 1);
  REQUIRE(summary.at("rank_crashes").is_array());
  CHECK(!summary.at("rank_crashes").empty());
  CHECK(summary.at("rank_crashes")[0].get<std::string>().find("signal 6") != std::string::npos);

  // The same job with the plain rank: finished, nothing crashed.
  const auto clean_dir = dir.path() / "clean";
  const auto clean = run_command(run_with_rank(MSOMNI_RANK_BINARY_PATH, cfg, clean_dir));
  CAPTURE(clean.output);
  CHECK(clean.exit_code == 0);
  CHECK(parse_json(read_text(clean_dir / "summary.json")).at("rank_crashes").empty());
}

TEST_CASE("sanitizers: a rank's lifecycle from start to exit has no AddressSanitizer or UBSan report") {
  if (!fs::exists(MSOMNI_ASAN_RANK_BINARY))
    MSOMNI_SKIP_TEST(std::string("no AddressSanitizer build of msomni-rank at ") + MSOMNI_ASAN_RANK_BINARY +
                     " (make test builds it: cmake --preset asan && cmake --build build-asan --target msomni-rank)");
  temp_dir dir;
  // The quickstart on its real shards (images, H.264 videos, captions) through the data stage
  // actors, with checkpoints: the whole path a rank takes, from start to its exit.
  const auto run_dir = dir.path() / "run";
  const std::string command =
      "MSOMNI_CACHE_DIR='" + (dir.path() / "cache").string() + "' " +
      // Any report aborts the rank (SIGABRT), which msomni-run reports as rank_crashed; leaks
      // are not errors here (the check is for memory errors and undefined behaviour). The UBSan
      // suppressions name code that is not msomni's, each with its reason.
      "ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 "
      "UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:suppressions=" MSOMNI_SOURCE_DIR
      "/tools/sanitizers/ubsan.supp MSOMNI_RANK_BINARY='" MSOMNI_ASAN_RANK_BINARY "' " MSOMNI_RUN_BINARY
      " " MSOMNI_SOURCE_DIR "/configs/quickstart.toml --set training.steps=12 --set checkpoint.interval_steps=5 "
      "--run-dir " + run_dir.string();
  const auto r = run_command(command);
  CAPTURE(r.output);
  std::string logs;
  for (const auto& e : fs::directory_iterator(run_dir / "logs")) logs += read_text(e.path());
  const bool reported = std::regex_search(logs, std::regex("ERROR: AddressSanitizer|runtime error:|SUMMARY: "));
  CHECK_MESSAGE(!reported, logs.substr(0, 20000));
  CHECK(r.exit_code == 0);
  CHECK(parse_json(read_text(run_dir / "summary.json")).at("rank_crashes").empty());
  CHECK(std::regex_search(logs, std::regex("RESULT ok")));
}
