// Real msomni-run jobs on real shards train from the data stage actors (io.pipeline =
// "actors", the default): the same losses as the in-thread pipeline step for step when
// nothing is downgraded, a stop and resume that continues loss for loss, videos downgraded
// live (counted per step in metrics.jsonl, spans in events.jsonl) when decoding them costs
// more than a training step, and none when the pipeline keeps up.
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

namespace fs = std::filesystem;
using msomni::testing::has_event;
using msomni::testing::json;
using msomni::testing::read_json_lines;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

std::string config_path(const std::string& rel) { return std::string(MSOMNI_SOURCE_DIR) + "/" + rel; }

// step -> the loss exactly as metrics.jsonl wrote it, and the downgrades per step.
struct job_metrics {
  std::map<uint64_t, json> loss;
  std::map<uint64_t, uint64_t> downgraded;
  uint64_t downgraded_total = 0;
};

job_metrics read_job_metrics(const fs::path& run_dir) {
  job_metrics m;
  for (const auto& r : read_json_lines(run_dir / "metrics.jsonl")) {
    const auto step = r.at("step").get<uint64_t>();
    const auto downgraded = r.at("downgraded_samples").get<uint64_t>();
    m.loss[step] = r.at("loss");
    m.downgraded[step] = downgraded;
    m.downgraded_total += downgraded;
  }
  return m;
}

// msomni-run CONFIG with the data cache in `dir` and `sets`; the exit code and output.
msomni::testing::command_result run_job(const msomni::testing::temp_dir& dir, const std::string& config,
                                        const fs::path& run_dir, const std::string& sets) {
  return run_command("MSOMNI_CACHE_DIR=" + (dir.path() / "cache").string() + " " + MSOMNI_RUN_BINARY + " " + config +
                     " --run-dir " + run_dir.string() + " " + sets);
}

}  // namespace

TEST_CASE("the data stage actors train the quickstart loss for loss like the inline pipeline, and a resume continues exactly") {
  msomni::testing::temp_dir dir;
  const auto quickstart = config_path("configs/quickstart.toml");
  const std::string exact = "--set io.downgrade_video=false --set training.steps=24";
  const auto plan = run_job(dir, quickstart, dir.path() / "plan", exact + " --dry-run");
  CHECK(plan.output.find("io:           data stage actors (decoding beside compute)") != std::string::npos);

  const auto actors = run_job(dir, quickstart, dir.path() / "actors", exact);
  CAPTURE(actors.output);
  REQUIRE(actors.exit_code == 0);
  CHECK(read_text(dir.path() / "actors" / "logs" / "rank-0.log").find("DATA the data stage actors") != std::string::npos);
  const auto inline_run = run_job(dir, quickstart, dir.path() / "inline", exact + " --set io.pipeline=inline");
  REQUIRE(inline_run.exit_code == 0);
  CHECK(read_text(dir.path() / "inline" / "logs" / "rank-0.log").find("DATA the inline pipeline") != std::string::npos);
  const auto a = read_job_metrics(dir.path() / "actors"), b = read_job_metrics(dir.path() / "inline");
  REQUIRE(a.loss.size() == 24);
  CHECK(a.loss == b.loss);
  CHECK(a.downgraded_total == 0);

  // 12 steps, then the same run directory resumed to 24.
  const auto resumed_dir = dir.path() / "resumed";
  REQUIRE(run_job(dir, quickstart, resumed_dir, "--set io.downgrade_video=false --set training.steps=12").exit_code == 0);
  const auto second = run_job(dir, quickstart, resumed_dir, exact);
  CAPTURE(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK(read_text(resumed_dir / "logs" / "rank-0.log").find("from checkpoint step 12") != std::string::npos);
  const auto r = read_job_metrics(resumed_dir);
  CHECK(r.loss == a.loss);
}

TEST_CASE("videos that cost more to decode than a step are downgraded live and counted, and a pipeline that keeps up downgrades none") {
  msomni::testing::temp_dir dir;
  // One decode worker for 48-frame videos against a one-layer model: decoding at full
  // quality takes several times a step's compute.
  const auto slow = run_job(dir, config_path("tools/bench_train_job/video-heavy.toml"), dir.path() / "slow",
                            "--set io.decode_workers=1 --set training.threads=1 --set training.steps=40");
  CAPTURE(slow.output);
  REQUIRE(slow.exit_code == 0);
  const auto m = read_job_metrics(dir.path() / "slow");
  REQUIRE(m.loss.size() == 40);
  MESSAGE("video-heavy job: " << m.downgraded_total << " samples downgraded in 40 steps");
  CHECK(m.downgraded_total > 0);
  CAPTURE(read_text(dir.path() / "slow" / "events.jsonl"));
  const auto events = read_json_lines(dir.path() / "slow" / "events.jsonl");
  CHECK(has_event(events, "video_downgrade", "from step "));
  CHECK(has_event(events, "data_summary", "video downgrades " + std::to_string(m.downgraded_total)));
  CHECK(slow.output.find("video downgrades " + std::to_string(m.downgraded_total)) != std::string::npos);

  // The same job with io.downgrade_video = false decodes every video in full.
  const auto full = run_job(dir, config_path("tools/bench_train_job/video-heavy.toml"), dir.path() / "full",
                            "--set io.decode_workers=1 --set training.threads=1 --set training.steps=40 "
                            "--set io.downgrade_video=false");
  REQUIRE(full.exit_code == 0);
  CHECK(read_job_metrics(dir.path() / "full").downgraded_total == 0);
  CHECK_FALSE(has_event(read_json_lines(dir.path() / "full" / "events.jsonl"), "video_downgrade"));

  // The quickstart's small videos decode far faster than its model steps (one replica: the
  // decision follows live timing, and four busy ranks on two cores would stretch it).
  const auto quick = run_job(dir, config_path("configs/quickstart.toml"), dir.path() / "quick",
                             "--set training.steps=40 --set elasticity.replicas=1 --set elasticity.min_replicas=1 "
                             "--set elasticity.max_replicas=1 --set training.grad_accum=4");
  REQUIRE(quick.exit_code == 0);
  CHECK(read_job_metrics(dir.path() / "quick").downgraded_total == 0);
  CHECK_FALSE(has_event(read_json_lines(dir.path() / "quick" / "events.jsonl"), "video_downgrade"));
}
