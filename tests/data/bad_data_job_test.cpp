// Bad data in whole jobs, with real processes: msomni-run refuses a source it could never
// read before anything starts; a data failure that a replacement rank repeats ends the job
// with the rank's own words; and bad samples met while training are counted per step in
// metrics.jsonl, in events.jsonl, by `msomni status` and in the end-of-job line.
#include "core/child_process.hpp"
#include "core/rng.hpp"
#include "media_encode.hpp"
#include "scene.hpp"
#include "support/job_probe.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "tar_format.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using msomni::testing::events_named;
using msomni::testing::json;
using msomni::testing::read_json_lines;
using msomni::testing::reason_of;
using msomni::testing::run_command;
using msomni::testing::read_text;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> jpeg(int seed) {
  auto rng = msomni::rng_stream::derive(uint64_t(seed), "test.job.image");
  std::vector<uint8_t> rgb;
  msomni::gen::render(msomni::gen::random_scene(rng, false), 32, 0, 1, rgb);
  return msomni::gen::encode_image(rgb, 32, msomni::gen::image_format::jpeg);
}

// SOI and EOI intact, everything between scrambled: passes every check but decoding.
std::vector<uint8_t> scrambled_jpeg(int seed) {
  auto b = jpeg(seed);
  for (size_t i = 2; i + 2 < b.size(); ++i) b[i] = uint8_t(i * 37 + size_t(seed));
  return b;
}

// A shard of `good` captioned images, then `corrupt` undecodable ones and `uncaptioned` images
// without their caption.
void image_shard(const fs::path& path, int good, int corrupt, int uncaptioned) {
  msomni::data::tar_writer w(path.string());
  int i = 0;
  auto name = [&](const char* ext) {
    char n[32];
    std::snprintf(n, sizeof n, "%06d.%s", i, ext);
    return std::string(n);
  };
  for (int k = 0; k < good; ++k, ++i) {
    w.add(name("jpg"), jpeg(i));
    w.add(name("txt"), bytes("a captioned shape number " + std::to_string(i)));
  }
  for (int k = 0; k < corrupt; ++k, ++i) {
    w.add(name("jpg"), scrambled_jpeg(i));
    w.add(name("txt"), bytes("a scrambled picture"));
  }
  for (int k = 0; k < uncaptioned; ++k, ++i) w.add(name("jpg"), jpeg(i));
  w.finish();
}

void text_shard(const fs::path& path, int samples) {
  msomni::data::tar_writer w(path.string());
  for (int i = 0; i < samples; ++i) w.add("t" + std::to_string(i) + ".txt", bytes("some text to learn from, number " + std::to_string(i)));
  w.finish();
}

// A tiny model over the given [[data.sources]] tables; 2 replicas, min 1.
std::string job_text(const std::string& sources, int64_t steps) {
  return "[job]\nname = \"bad-data\"\n"
         "[model]\nname = \"fuyu-tiny\"\nd_model = 32\nn_layers = 1\nn_heads = 2\nd_ff = 64\nimage_size = 16\n"
         "patch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n" +
         sources +
         "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = 2\nsteps = " + std::to_string(steps) +
         "\nlr = 1e-3\nseed = 5\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\nheartbeat_interval_s = 0.5\nheartbeat_misses = 10\n"
         "[checkpoint]\ninterval_steps = 100000\n";
}

std::string source(const std::string& name, const fs::path& uri, const char* kind) {
  return "[[data.sources]]\nname = \"" + name + "\"\nuri = \"" + uri.string() + "\"\nmodality = \"" + kind + "\"\n";
}

// The count a bad_samples object (of a metrics line or the status) holds for `reason`.
uint64_t bad_count(const json& record, const std::string& reason) {
  const auto& bad = record.at("bad_samples");
  return bad.value(reason, uint64_t{0});
}

}  // namespace

TEST_CASE("msomni-run refuses a source with no usable sample before anything starts") {
  msomni::testing::temp_dir dir;
  fs::create_directories(dir.path() / "good");
  text_shard(dir.path() / "good" / "a.tar", 4);
  struct unusable {
    const char* what;
    const char* kind;
    std::function<void(const fs::path&)> make;
  };
  const std::vector<unusable> cases = {
      {"an empty directory", "image", [](const fs::path&) {}},
      {"only 0-byte shards", "image",
       [](const fs::path& d) {
         std::ofstream(d / "a.tar");
         std::ofstream(d / "b.tar");
       }},
      {"only foreign extensions", "image",
       [](const fs::path& d) {
         msomni::data::tar_writer w((d / "a.tar").string());
         w.add("000.json", bytes("{}"));
         w.add("000.cls", bytes("3"));
         w.add("001.json", bytes("{}"));
         w.finish();
       }},
      {"captions but no image", "image", [](const fs::path& d) { text_shard(d / "a.tar", 3); }},
      {"images but no caption", "image", [](const fs::path& d) { image_shard(d / "a.tar", 0, 0, 3); }},
      {"videos for an image source", "image",
       [](const fs::path& d) {
         msomni::data::tar_writer w((d / "a.tar").string());
         w.add("000.mp4", bytes("not even a video"));
         w.add("000.txt", bytes("a caption"));
         w.finish();
       }},
  };
  int n = 0;
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const auto data = dir.path() / ("bad" + std::to_string(n++));
    fs::create_directories(data);
    c.make(data);
    const auto cfg = dir.path() / "job.toml";
    std::ofstream(cfg) << job_text(source("good", dir.path() / "good", "text") + source("bad", data, c.kind), 10);
    const auto dry = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --dry-run");
    CAPTURE(dry.output);
    CHECK(dry.exit_code == 2);
    // Located like every config error: FILE:LINE:COL: key: reason, naming the source's path.
    CHECK(std::regex_search(dry.output, std::regex("job\\.toml:\\d+:\\d+: data\\.sources\\[1\\]\\.uri: .*no usable sample")));
    CHECK(dry.output.find(data.string()) != std::string::npos);
    CHECK(dry.output.find("data.sources[0].uri") == std::string::npos);
  }
  // Without --dry-run nothing starts either: no run directory, no rank.
  const auto run_dir = dir.path() / "run";
  const auto r = run_command(std::string(MSOMNI_RUN_BINARY) + " " + (dir.path() / "job.toml").string() + " --run-dir " +
                             run_dir.string());
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK_FALSE(fs::exists(run_dir / "events.jsonl"));
}

TEST_CASE("a data failure that a replacement rank repeats ends the job at once with the rank's reason") {
  msomni::testing::temp_dir dir;
  fs::create_directories(dir.path() / "broken");
  image_shard(dir.path() / "broken" / "a.tar", 0, 6, 0);  // readable, every image undecodable
  const auto cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << job_text(source("broken", dir.path() / "broken", "image"), 50);
  const auto run_dir = dir.path() / "run";
  // The pre-flight would refuse the source (it decodes a sample): off, so the ranks meet it.
  const auto r = run_command("timeout 240 " + std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --run-dir " +
                             run_dir.string() + " --set health.preflight=off");
  CAPTURE(r.output);
  CAPTURE(read_text(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(r.exit_code == 1);
  const auto failed = events_named(events, "job_failed");
  REQUIRE(failed.size() == 1);
  const std::string reason = reason_of(failed[0]);
  // The rank's own words, said to be a repeat, and no recovery budget spent on more of them.
  CHECK(reason.find("bad samples in a row") != std::string::npos);
  CHECK(reason.find("again") != std::string::npos);
  CHECK(reason.find("gave up after") == std::string::npos);
  // The first two, and at most one replacement per first rank: each of them may fail once on
  // its own (its first bad sample, and so its words, can differ) before a replacement repeats one.
  CHECK(events_named(events, "rank_spawn").size() <= 4);
  // Every recovery event says what it recovers from.
  for (const char* name : {"recovery", "recovery_waiting", "rank_down"})
    for (const auto& e : events_named(events, name)) {
      CAPTURE(e.dump());
      CHECK_FALSE(reason_of(e).empty());
      CHECK(reason_of(e).front() != ';');
    }
  CHECK(r.output.find("job failed: ") != std::string::npos);
}

TEST_CASE("bad samples are counted per step in metrics, events, status and the end-of-job line") {
  msomni::testing::temp_dir dir;
  fs::create_directories(dir.path() / "images");
  image_shard(dir.path() / "images" / "a.tar", 9, 2, 1);
  const auto cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << job_text(source("images", dir.path() / "images", "image"), 100000);
  const auto run_dir = dir.path() / "run";
  msomni::child_process job(MSOMNI_RUN_BINARY, {cfg.string(), "--run-dir", run_dir.string()});
  const auto counted = [&] {
    for (const auto& m : read_json_lines(run_dir / "metrics.jsonl"))
      if (bad_count(m, "corrupt_image") + bad_count(m, "missing_member") > 0) return true;
    return false;
  };
  const bool seen = msomni::testing::wait_for(counted, 90s);
  CAPTURE(read_text(run_dir / "metrics.jsonl").substr(0, 2000));
  REQUIRE(seen);
  // Steps without bad samples say so too: every line has the field.
  for (const auto& m : read_json_lines(run_dir / "metrics.jsonl")) CHECK(m.at("bad_samples").is_object());
  const auto status_json = run_command(std::string(MSOMNI_CLI_BINARY) + " status --json --run-dir " + run_dir.string());
  CAPTURE(status_json.output);
  CHECK(bad_count(msomni::testing::parse_json(status_json.output), "corrupt_image") > 0);
  const auto status = run_command(std::string(MSOMNI_CLI_BINARY) + " status --run-dir " + run_dir.string());
  CAPTURE(status.output);
  CHECK(std::regex_search(status.output, std::regex("bad samples [1-9]\\d*: .*corrupt_image=[1-9]")));
  run_command(std::string(MSOMNI_CLI_BINARY) + " stop --run-dir " + run_dir.string());
  while (job.read_until("\x01", 60s)) {
  }
  CHECK(job.wait(60s) == 5);  // stopped with a final checkpoint
  CAPTURE(job.log);
  CHECK(std::regex_search(job.log, std::regex("bad samples [1-9]\\d*: .*corrupt_image=[1-9]")));
  CAPTURE(read_text(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  // The reasons are text for people; the regexes read that text, not JSON.
  bool per_step = false, total = false;
  for (const auto& e : events_named(events, "bad_samples"))
    per_step = per_step || std::regex_search(reason_of(e), std::regex("^step \\d+: [1-9]"));
  for (const auto& e : events_named(events, "bad_samples_total"))
    total = total || std::regex_search(reason_of(e), std::regex("corrupt_image=[1-9]"));
  CHECK(per_step);
  CHECK(total);
}

TEST_CASE("io.max_sample_bytes is in the --dry-run plan and range-checked") {
  msomni::testing::temp_dir dir;
  fs::create_directories(dir.path() / "images");
  image_shard(dir.path() / "images" / "a.tar", 2, 0, 0);
  const auto cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << job_text(source("images", dir.path() / "images", "image"), 10);
  const auto plan = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --dry-run");
  CAPTURE(plan.output);
  CHECK(plan.exit_code == 0);
  CHECK(plan.output.find("max sample 256 MiB") != std::string::npos);
  CHECK(plan.output.find("io.max_sample_bytes = 268435456") != std::string::npos);
  const auto low = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --dry-run --set io.max_sample_bytes=10");
  CAPTURE(low.output);
  CHECK(low.exit_code == 2);
  CHECK(low.output.find("io.max_sample_bytes") != std::string::npos);
}

TEST_CASE("images stating more pixels than io.max_image_pixels are skipped undecoded and counted as too_many_pixels") {
  msomni::testing::temp_dir dir;
  fs::create_directories(dir.path() / "images");
  {
    // 32x32 images (1024 pixels) and two 128x128 PNGs (16384 pixels) among them.
    msomni::data::tar_writer w((dir.path() / "images" / "a.tar").string());
    for (int i = 0; i < 10; ++i) {
      char n[16];
      std::snprintf(n, sizeof n, "%06d", i);
      if (i == 3 || i == 7) {
        auto rng = msomni::rng_stream::derive(uint64_t(i), "test.job.large");
        std::vector<uint8_t> rgb;
        msomni::gen::render(msomni::gen::random_scene(rng, false), 128, 0, 1, rgb);
        w.add(std::string(n) + ".png", msomni::gen::encode_image(rgb, 128, msomni::gen::image_format::png));
      } else {
        w.add(std::string(n) + ".jpg", jpeg(i));
      }
      w.add(std::string(n) + ".txt", bytes("a shape number " + std::to_string(i)));
    }
    w.finish();
  }
  const auto cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << job_text(source("images", dir.path() / "images", "image"), 6);
  const auto plan = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() +
                                " --dry-run --set io.max_image_pixels=4096 --set io.max_video_pixels=100000");
  CAPTURE(plan.output);
  CHECK(plan.exit_code == 0);
  CHECK(plan.output.find("at most 4096 pixels an image and 100000 a video frame") != std::string::npos);
  const auto low = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --dry-run --set io.max_image_pixels=1");
  CHECK(low.exit_code == 2);
  CHECK(low.output.find("io.max_image_pixels") != std::string::npos);

  const auto run_dir = dir.path() / "run";
  const auto job = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --set io.max_image_pixels=4096 --run-dir " +
                               run_dir.string());
  CAPTURE(job.output);
  CHECK(job.exit_code == 0);
  CHECK(std::regex_search(job.output, std::regex("bad samples [1-9]\\d*: .*too_many_pixels=[1-9]")));
  uint64_t counted = 0;
  for (const auto& m : read_json_lines(run_dir / "metrics.jsonl")) counted += bad_count(m, "too_many_pixels");
  CHECK(counted > 0);
  // With the default bound the same shard is clean.
  const auto clean_dir = dir.path() / "clean";
  const auto clean = run_command(std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --run-dir " + clean_dir.string());
  CAPTURE(clean.output);
  CHECK(clean.exit_code == 0);
  CHECK(clean.output.find("too_many_pixels") == std::string::npos);
}
