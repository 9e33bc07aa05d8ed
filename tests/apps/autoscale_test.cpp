// Utilisation-driven scaling with real processes: a job whose replica is kept busy grows
// into a free slot; a job judged idle (its busy share below scale_down_utilization) shrinks;
// the cooldown holds each at one resize; every decision is in events.jsonl with its reason.
#include "core/child_process.hpp"
#include "support/job_probe.hpp"
#include "support/process_runner.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

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

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Runs the job until `event_text` is journaled and a metrics line shows `world`, then stops it.
std::string run_until(const std::string& toml, const std::string& event_text, uint32_t world,
                      const msomni::testing::temp_dir& dir = msomni::testing::temp_dir()) {
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {dir.write("job.toml", toml), "--run-dir", run_dir.string()});
  const auto seen = [&] {
    return msomni::testing::read_text(run_dir / "events.jsonl").find(event_text) != std::string::npos &&
           msomni::testing::read_text(run_dir / "metrics.jsonl").find("\"world_size\":" + std::to_string(world) + ",") !=
               std::string::npos;
  };
  const bool reached = msomni::testing::wait_for(seen, 120s);
  // A few more seconds: the cooldown must hold it at one resize.
  std::this_thread::sleep_for(3s);
  ::kill(job.pid(), SIGTERM);
  CHECK(job.wait(120s) == 0);
  const auto events = msomni::testing::read_text(run_dir / "events.jsonl");
  CAPTURE(events);
  CHECK(reached);
  return events;
}

}  // namespace

TEST_CASE("a busy replica grows the job into a free slot, once within the cooldown") {
  const auto events = run_until(autoscaled_job(1, "scale_up_utilization = 0.5\nscale_up_sustain_s = 1\n"
                                                  "scale_down_utilization = 0.01\nscale_down_sustain_s = 3600\n"),
                                "one more replica, 2 in all", 2);
  CHECK(count_of(events, "\"event\":\"autoscale\"") == 1);
  CHECK(events.find("\"event\":\"autoscale\",\"reason\":\"busy ") != std::string::npos);
  CHECK(events.find("\"event\":\"scale_up_done\"") != std::string::npos);
}

TEST_CASE("a job judged idle shrinks by one replica, once within the cooldown") {
  // Every step of a synthetic job waits a little for data and checkpoints, so a threshold of
  // 99.9% busy makes it idle without slowing anything down.
  const auto events = run_until(autoscaled_job(2, "scale_up_utilization = 1.0\nscale_up_sustain_s = 3600\n"
                                                  "scale_down_utilization = 0.999\nscale_down_sustain_s = 1\n"),
                                "one replica less, 1 in all", 1);
  CHECK(count_of(events, "\"event\":\"autoscale\"") == 1);
  CHECK(events.find("below 100%") != std::string::npos);
}

TEST_CASE("a job kept idle by slow data shrinks by one replica, once within the cooldown") {
  msomni::testing::temp_dir dir;
  const auto events = run_until(data_starved_job(dir, "scale_up_utilization = 1.0\nscale_up_sustain_s = 3600\n"
                                                      "scale_down_utilization = 0.9\nscale_down_sustain_s = 2\n"),
                                "one replica less, 1 in all", 1, dir);
  CHECK(count_of(events, "\"event\":\"autoscale\"") == 1);
  CHECK(events.find("below 90%") != std::string::npos);
}
