// training.device in real msomni-run jobs on a machine without a usable GPU: "cuda" is
// refused before anything starts (exit 2, at the key, with the reason), "auto" trains on
// the CPU and each rank says so in one COMPUTE line. Skipped where a GPU is usable.
#include "support/text_and_pids.hpp"
#include "support/process_runner.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <filesystem>

namespace fs = std::filesystem;

using msomni::testing::count_of;

namespace {

std::string quickstart() { return std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml"; }

// msomni-run's own report of this machine's GPUs (the dry run's environment line).
bool machine_has_gpu() {
  const auto r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --dry-run");
  return r.output.find("; GPUs: none") == std::string::npos;
}

}  // namespace

TEST_CASE("training.device = cuda without a usable GPU is refused before any rank starts") {
  if (machine_has_gpu()) MSOMNI_SKIP_TEST("this machine has a usable GPU: cuda is not refused here");
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  const auto r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --run-dir " +
                                              run_dir.string() + " --set training.device=\\\"cuda\\\"");
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("nothing was started") != std::string::npos);
  CHECK(r.output.find("--set[1]:1:17: training.device: \"cuda\" needs a GPU for each of the 2 ranks") != std::string::npos);
  CHECK(r.output.find("no usable GPU") != std::string::npos);
  CHECK_FALSE(fs::exists(run_dir / "logs"));  // no rank was started
  CHECK_FALSE(fs::exists(run_dir / "metrics.jsonl"));
  // The dry run refuses it the same way.
  const auto dry = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                                                " --dry-run --set training.device=\\\"cuda\\\"");
  CHECK(dry.exit_code == 2);
}

TEST_CASE("training.device = auto without a usable GPU trains on the CPU and says why in one line") {
  if (machine_has_gpu()) MSOMNI_SKIP_TEST("this machine has a usable GPU: auto picks it here");
  msomni::testing::temp_dir dir;
  const auto run_dir = dir.path() / "run";
  const auto r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --run-dir " +
                                              run_dir.string() + " --set training.steps=3");
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* rank : {"rank-0.log", "rank-1.log"}) {
    const auto log = msomni::testing::read_text(run_dir / "logs" / rank);
    CAPTURE(log);
    CHECK(count_of(log, "COMPUTE ") == 1);
    CHECK(log.find("COMPUTE cpu, ") != std::string::npos);
    CHECK(log.find("(training.device=auto: no usable GPU: ") != std::string::npos);
    CHECK(log.find("GRADIENTS gradients all-reduced through same-host shared memory (epoch 1, 0 of 2 members on GPUs)") != std::string::npos);
  }
  const auto dry = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --dry-run");
  CHECK(dry.output.find("rank 1 -> local (127.0.0.1), cpu, ") != std::string::npos);
  CHECK(dry.output.find("[training.device=auto: no usable GPU: ") != std::string::npos);
}
