// Utilisation-driven scaling with real processes: a job whose replica is kept busy grows
// into a free slot; a job judged idle (its busy share below scale_down_utilization) shrinks;
// the cooldown holds each at one resize; every decision is in events.jsonl with its reason.
#include "core/child_process.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::events_named;
using msomni::testing::has_event;
using msomni::testing::has_reason_containing;
using msomni::testing::json;
using msomni::testing::read_json_lines;

namespace {

std::string autoscaled_job(int64_t replicas, const std::string& thresholds) {
  return "[job]\nname = \"autoscaled\"\n"
         "[model]\nname = \"fuyu-tiny\"\nd_model = 64\nn_layers = 2\nn_heads = 4\nd_ff = 128\nimage_size = 16\n"
         "patch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = " + std::to_string(4 / replicas) +
         "\nsteps = 100000\nlr = 1e-3\nseed = 5\n"
         "[elasticity]\nreplicas = " + std::to_string(replicas) +
         "\nmin_replicas = 1\nmax_replicas = 2\nheartbeat_interval_s = 0.5\nheartbeat_misses = 10\n"
         "grace_period_s = 30\nautoscale = true\nautoscale_cooldown_s = 600\n" + thresholds +
         "[checkpoint]\ninterval_steps = 50\n";
}

// The same job on real shards whose videos cost more to decode than its steps, decoded in
// the training thread (io.pipeline = "inline", no downgrade): each step waits for its data
// for most of its time, so its replicas are idle by any reasonable threshold.
std::string data_starved_job(const msomni::testing::temp_dir& dir, const std::string& thresholds) {
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);  // this test process and its children
  std::string job = autoscaled_job(2, thresholds);
  const std::string synthetic = "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n";
  job.replace(job.find(synthetic), synthetic.size(),
              "[[data.sources]]\nname = \"videos\"\nuri = \"generated://video-heavy/videos\"\nmodality = \"video\"\n"
              "[io]\npipeline = \"inline\"\ndowngrade_video = false\n");
  return job;
}

// Runs the job until an event's reason holds `event_text` and a metrics line shows `world`,
// then stops it; its events.
std::vector<json> run_until(const std::string& toml, const std::string& event_text, uint32_t world,
                      const msomni::testing::temp_dir& dir = msomni::testing::temp_dir()) {
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {dir.write("job.toml", toml), "--run-dir", run_dir.string()});
  const auto seen = [&] {
    if (!has_reason_containing(read_json_lines(run_dir / "events.jsonl"), event_text)) return false;
    for (const auto& m : read_json_lines(run_dir / "metrics.jsonl"))
      if (m.at("world_size") == world) return true;
    return false;
  };
  const bool reached = msomni::testing::wait_for(seen, 120s);
  // A few more seconds: the cooldown must hold it at one resize.
  std::this_thread::sleep_for(3s);
  ::kill(job.pid(), SIGTERM);
  CHECK(job.wait(120s) == 4);  // preempted (SIGTERM) with a final checkpoint
  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  CHECK(reached);
  return read_json_lines(run_dir / "events.jsonl");
}

}  // namespace

TEST_CASE("a busy replica grows the job into a free slot, once within the cooldown") {
  const auto events = run_until(autoscaled_job(1, "scale_up_utilization = 0.5\nscale_up_sustain_s = 1\n"
                                                  "scale_down_utilization = 0.01\nscale_down_sustain_s = 3600\n"),
                                "one more replica, 2 in all", 2);
  CHECK(events_named(events, "autoscale").size() == 1);
  CHECK(has_event(events, "autoscale", "busy "));
  CHECK(has_event(events, "scale_up_done"));
}

TEST_CASE("a job judged idle shrinks by one replica, once within the cooldown") {
  // Every step of a synthetic job waits a little for data and checkpoints, so a threshold of
  // 99.9% busy makes it idle without slowing anything down.
  const auto events = run_until(autoscaled_job(2, "scale_up_utilization = 1.0\nscale_up_sustain_s = 3600\n"
                                                  "scale_down_utilization = 0.999\nscale_down_sustain_s = 1\n"),
                                "one replica less, 1 in all", 1);
  CHECK(events_named(events, "autoscale").size() == 1);
  CHECK(has_reason_containing(events, "below 100%"));
}

TEST_CASE("a job kept idle by slow data shrinks by one replica, once within the cooldown") {
  msomni::testing::temp_dir dir;
  const auto events = run_until(data_starved_job(dir, "scale_up_utilization = 1.0\nscale_up_sustain_s = 3600\n"
                                                      "scale_down_utilization = 0.9\nscale_down_sustain_s = 2\n"),
                                "one replica less, 1 in all", 1, dir);
  CHECK(events_named(events, "autoscale").size() == 1);
  CHECK(has_reason_containing(events, "below 90%"));
}
