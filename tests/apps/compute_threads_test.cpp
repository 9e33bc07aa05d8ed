// training.threads reaches the ranks of a real job: by default each rank takes the node's
// cores shared by the ranks its agent may run, --dry-run shows what each rank will use, and
// a given thread count trains bit-identically run to run.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

namespace fs = std::filesystem;

namespace {

std::string quickstart() { return std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml"; }

// The loss of each metrics line in file order, as written (a number, or null plus its flag).
std::vector<msomni::testing::json> losses(const fs::path& run_dir) {
  std::vector<msomni::testing::json> out;
  for (const auto& r : msomni::testing::read_json_lines(run_dir / "metrics.jsonl")) out.push_back(r.at("loss"));
  return out;
}

}  // namespace

TEST_CASE("--dry-run shows each rank's threads: the node's cores over its slots less its decode workers, or training.threads") {
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  // The quickstart decodes real shards through the data stage actors, 2 decode workers each.
  const int per_rank = std::max(1, hw / 2 - 2);
  const auto r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --dry-run");
  CAPTURE(r.output);
  CHECK(r.output.find("rank 1 -> local (127.0.0.1), cpu, " + std::to_string(per_rank) +
                      (per_rank == 1 ? " thread (" : " threads (") + std::to_string(hw) +
                      " cores / 2 slots, less 2 decode workers)") != std::string::npos);
  // Decoding inline takes no cores beside compute.
  const auto inline_run = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                                                       " --dry-run --set io.pipeline=inline");
  const int inline_per_rank = std::max(1, hw / 2);
  CHECK(inline_run.output.find("rank 1 -> local (127.0.0.1), cpu, " + std::to_string(inline_per_rank) +
                               (inline_per_rank == 1 ? " thread (" : " threads (") + std::to_string(hw) +
                               " cores / 2 slots)") != std::string::npos);
  const auto set = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                                                " --dry-run --set training.threads=3");
  CHECK(set.output.find("rank 0 -> local (127.0.0.1), cpu, 3 threads (training.threads)") != std::string::npos);
}

TEST_CASE("ranks compute with training.threads, bit-identically run to run") {
  msomni::testing::temp_dir dir;
  std::vector<std::vector<msomni::testing::json>> curves;
  for (const char* name : {"a", "b"}) {
    const auto run_dir = dir.path() / name;
    const auto r = msomni::testing::run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() + " --run-dir " +
                                                run_dir.string() + " --set training.threads=2 --set training.steps=12" +
                                                " --set io.downgrade_video=false");  // downgrades follow live timing
    CAPTURE(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(msomni::testing::read_text(run_dir / "logs" / "rank-0.log").find("COMPUTE cpu, 2 threads") != std::string::npos);
    curves.push_back(losses(run_dir));
  }
  REQUIRE(curves[0].size() == 12);
  CHECK(curves[0] == curves[1]);
}
