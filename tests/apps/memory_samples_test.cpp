// Every rank measures its memory exactly and sends it, and the budget is enforced, with real
// processes: a quickstart job journals one trace line per step and rank in RUN_DIR/memory (the
// format of docs/memory_traces.md, with the step's batch features), its metrics.jsonl lines
// carry the step's memory, and in-step samples come at a short memory.sample_interval_ms; a job
// whose memory.device_memory_gb is below its peak fails with the out-of-memory numbers and ends
// once a replacement meets the same, instead of spending every recovery on it.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using msomni::testing::json;
using msomni::testing::parse_json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

std::string quickstart() { return std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml"; }

// The quickstart on `dir`'s own cache (this process and its children).
void use_cache_of(const msomni::testing::temp_dir& dir) {
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
}

}  // namespace

TEST_CASE("a job journals each rank's memory per step with its batch, metrics lines carry it, in-step samples come") {
  msomni::testing::temp_dir dir;
  use_cache_of(dir);
  const auto run_dir = dir.path() / "run";
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                             " --set training.steps=12 --set memory.sample_interval_ms=1 --run-dir " + run_dir.string());
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  size_t in_step_lines = 0;
  for (const char* rank : {"rank-0", "rank-1"}) {
    CAPTURE(rank);
    const auto lines = read_json_lines(run_dir / "memory" / (std::string(rank) + ".jsonl"));
    REQUIRE(lines.size() == 12);
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto& l = lines[i];
      CAPTURE(l.dump());
      CHECK(l.size() == 8);
      CHECK(l.at("step") == i + 1);
      CHECK(l.at("in_use_bytes").get<uint64_t>() > 0);
      CHECK(l.at("peak_bytes").get<uint64_t>() >= l.at("in_use_bytes").get<uint64_t>());
      CHECK(l.at("world_size") == 2);
      CHECK(l.at("event") == "");
      const auto& b = l.at("batch");
      // global_batch 8 over 2 replicas of micro-batches of 2: 2 micro-batches, 4 samples a step
      const auto samples = b.at("samples").at("image").get<int>() + b.at("samples").at("video").get<int>() +
                           b.at("samples").at("text").get<int>();
      CHECK(samples == 4);
      CHECK(b.at("micro_batch") == 2);
      CHECK(b.at("seq_len").get<int>() > 0);
      CHECK(b.at("text_tokens").get<int>() > 0);
      CHECK(b.at("image_patches").get<int>() + b.at("video_patches").get<int>() > 0);
      CHECK(l.at("upcoming").is_array());
      CHECK(l.at("upcoming").size() <= 10);  // memory.horizon_steps
    }
    const auto in_step = run_dir / "memory" / (std::string(rank) + ".in_step.jsonl");
    if (fs::exists(in_step)) {
      for (const auto& l : read_json_lines(in_step)) {
        CHECK(l.at("step").get<int>() >= 1);
        CHECK(l.at("step").get<int>() <= 12);
        CHECK(l.at("in_use_bytes").get<uint64_t>() > 0);
        ++in_step_lines;
      }
    }
  }
  CHECK(in_step_lines > 0);  // 1 ms against steps of 10 ms and more
  const auto metrics = read_json_lines(run_dir / "metrics.jsonl");
  REQUIRE(metrics.size() == 12);
  for (const auto& m : metrics) {
    CAPTURE(m.dump());
    REQUIRE(m.contains("memory"));
    CHECK(m.at("memory").at("in_use_bytes").get<uint64_t>() > 0);
    CHECK(m.at("memory").at("peak_bytes").get<uint64_t>() >= m.at("memory").at("in_use_bytes").get<uint64_t>());
    CHECK(m.at("memory").at("ranks").get<int>() >= 1);
  }
}

TEST_CASE("--dry-run shows the rank's memory budget") {
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                             " --dry-run --set memory.device_memory_gb=0.5 --set memory.sample_interval_ms=20");
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("memory:       budget 0.5 GB per rank") != std::string::npos);
  CHECK(r.output.find("sampled every 20 ms") != std::string::npos);
}

TEST_CASE("a budget below the job's peak fails it with the out-of-memory numbers, once a replacement repeats them") {
  msomni::testing::temp_dir dir;
  use_cache_of(dir);
  const auto run_dir = dir.path() / "run";
  // The model's parameters, gradients and moments fit in 6 MB; its first workspace does not.
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + quickstart() +
                             " --set training.steps=6 --set memory.device_memory_gb=0.006 --run-dir " + run_dir.string());
  CAPTURE(r.output);
  CHECK(r.exit_code == 1);
  const auto s = parse_json(read_text(run_dir / "summary.json"));
  CHECK(s.at("state") == "failed");
  const auto reason = s.at("reason").get<std::string>();
  CAPTURE(reason);
  CHECK(reason.find("rank-") == 0);  // names the rank
  CHECK(reason.find("out of memory: cpu allocation of ") != std::string::npos);
  CHECK(reason.find(" bytes in use exceeds the budget of 6000000 bytes") != std::string::npos);
  CHECK(reason.find("memory.device_memory_gb") != std::string::npos);
  // Ended by the repeat, not by running out of recoveries.
  CHECK(reason.find("failed the same way, so a replacement would too") != std::string::npos);
  CHECK(reason.find("3 of 3 recoveries spent") == std::string::npos);
  CHECK_FALSE(fs::exists(run_dir / "memory" / "rank-0.jsonl"));  // no step ran
}
