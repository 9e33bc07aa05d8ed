// `msomni dataset pack` and `check` as a user runs them, with real images (FFmpeg's encoders)
// and real processes: a captioned folder becomes shards a short msomni-run job trains on;
// check passes clean shards and names every problem of damaged ones; a source pattern that
// matches nothing, or is malformed, is refused before anything starts, located in the config.
#include "core/rng.hpp"
#include "media_encode.hpp"
#include "scene.hpp"
#include "support/process_runner.hpp"
#include "tar_format.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <regex>

namespace fs = std::filesystem;
using msomni::testing::read_text;
using msomni::testing::run_command;

namespace {

const std::string cli = MSOMNI_CLI_BINARY;

std::vector<uint8_t> image(msomni::gen::image_format f, int seed) {
  msomni::gen::quiet_ffmpeg_logs();
  auto rng = msomni::rng_stream::derive(uint64_t(seed), "test.dataset_tool");
  std::vector<uint8_t> rgb;
  msomni::gen::render(msomni::gen::random_scene(rng, false), 32, 0, 1, rgb);
  return msomni::gen::encode_image(rgb, 32, f);
}

void write_file(const fs::path& p, const std::vector<uint8_t>& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A tiny model on one image source at `uri`, one replica, `steps` steps.
std::string job_text(const std::string& uri, int steps) {
  return "[job]\nname = \"packed\"\n"
         "[model]\nname = \"fuyu-tiny\"\nd_model = 32\nn_layers = 1\nn_heads = 2\nd_ff = 64\nimage_size = 16\n"
         "patch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n"
         "[[data.sources]]\nname = \"photos\"\nuri = \"" + uri + "\"\nmodality = \"image\"\n"
         "[training]\nglobal_batch = 4\nmicro_batch = 2\ngrad_accum = 2\nsteps = " + std::to_string(steps) +
         "\nlr = 1e-3\nseed = 5\n"
         "[elasticity]\nreplicas = 1\nmin_replicas = 1\nmax_replicas = 1\n"
         "[checkpoint]\ninterval_steps = 100000\n";
}

size_t lines_of(const std::string& text) { return size_t(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("msomni dataset pack turns a captioned image folder into shards a short job trains on") {
  using msomni::gen::image_format;
  msomni::testing::temp_dir dir;
  const fs::path photos = dir.path() / "photos";
  for (int i = 0; i < 5; ++i) {
    const std::string stem = "shape_" + std::to_string(i);
    write_file(photos / (stem + (i % 2 ? ".png" : ".jpg")), image(i % 2 ? image_format::png : image_format::jpeg, i));
    write_file(photos / (stem + ".txt"), bytes("a shape, number " + std::to_string(i)));
  }
  write_file(photos / "more" / "v1.2.jpeg", image(image_format::png, 9));  // PNG bytes named .jpeg, a dot in the stem
  write_file(photos / "more" / "v1.2.txt", bytes("a shape in a sub folder"));
  write_file(photos / "uncaptioned.jpg", image(image_format::jpeg, 7));
  write_file(photos / "notes.md", bytes("# not an image"));
  write_file(photos / "orphan.txt", bytes("a caption of nothing"));
  write_file(photos / "blank.jpg", image(image_format::jpeg, 8));
  write_file(photos / "blank.txt", bytes("  \n"));

  const fs::path shards = dir.path() / "shards";
  const auto pack = run_command(cli + " dataset pack --images " + photos.string() + " --out " + shards.string() + " --per-shard 2");
  CAPTURE(pack.output);
  REQUIRE(pack.exit_code == 0);
  CHECK(pack.output.find("packed 6 samples into 3 shards") != std::string::npos);
  CHECK(std::regex_search(pack.output, std::regex("uncaptioned\\.jpg: no caption \\(expected uncaptioned\\.txt")));
  CHECK(std::regex_search(pack.output, std::regex("notes\\.md: not an image msomni decodes, by its bytes")));
  CHECK(std::regex_search(pack.output, std::regex("orphan\\.txt: a caption without a media file")));
  CHECK(std::regex_search(pack.output, std::regex("blank\\.jpg: empty caption")));
  for (const char* s : {"shard-000000.tar", "shard-000001.tar", "shard-000002.tar"}) CHECK(fs::is_regular_file(shards / s));
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(shards)) entries += e.path().extension() == ".tar" ? 1 : 100;
  CHECK(entries == 3);  // no temporary left
  // The member of the misnamed file is named by its bytes, its key keeps the folder.
  const std::string all = read_text(shards / "shard-000000.tar") + read_text(shards / "shard-000001.tar") +
                          read_text(shards / "shard-000002.tar");
  CHECK(all.find("more/v1_2.png") != std::string::npos);
  CHECK(all.find("more/v1_2.txt") != std::string::npos);

  // OUT with shards is refused, and nothing in it changes.
  const auto before = read_text(shards / "shard-000000.tar");
  const auto again = run_command(cli + " dataset pack --images " + photos.string() + " --out " + shards.string());
  CAPTURE(again.output);
  CHECK(again.exit_code == 1);
  CHECK(again.output.find("already holds shards") != std::string::npos);
  CHECK(read_text(shards / "shard-000000.tar") == before);

  const auto check = run_command(cli + " dataset check " + shards.string());
  CAPTURE(check.output);
  CHECK(check.exit_code == 0);
  CHECK(check.output.find("good samples: image 6 video 0 text 0") != std::string::npos);
  CHECK(check.output.find("no problems") != std::string::npos);

  // A short real job on the packed shards, named by a glob relative to the config file.
  const fs::path cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << job_text("shards/shard-00000?.tar", 3);
  const auto run = run_command("cd / && timeout 240 " + std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --run-dir " +
                               (dir.path() / "run").string());
  CAPTURE(run.output);
  CHECK(run.exit_code == 0);
  const std::string metrics = read_text(dir.path() / "run" / "metrics.jsonl");
  CAPTURE(metrics);
  CHECK(lines_of(metrics) == 3);
  CHECK(metrics.find("\"bad_samples\":{}") != std::string::npos);
}

TEST_CASE("msomni dataset check exits 0 on a clean shard and 1 on a damaged one, naming shard, key and problem") {
  using msomni::gen::image_format;
  msomni::testing::temp_dir dir;
  const fs::path d = dir.path() / "shards";
  fs::create_directories(d);
  {
    msomni::data::tar_writer w((d / "shard-000000.tar").string());
    for (int i = 0; i < 3; ++i) {
      w.add("good" + std::to_string(i) + ".jpg", image(image_format::jpeg, i));
      w.add("good" + std::to_string(i) + ".txt", bytes("a good shape"));
    }
    w.finish();
  }
  const auto clean = run_command(cli + " dataset check " + d.string());
  CAPTURE(clean.output);
  CHECK(clean.exit_code == 0);
  {
    msomni::data::tar_writer w((d / "shard-000001.tar").string());
    auto scrambled = image(image_format::jpeg, 4);
    for (size_t i = 2; i + 2 < scrambled.size(); ++i) scrambled[i] = uint8_t(i * 37);
    w.add("scrambled.jpg", scrambled);
    w.add("scrambled.txt", bytes("a scrambled shape"));
    w.add("nocaption.png", image(image_format::png, 5));
    w.add("blank.png", image(image_format::png, 6));
    w.add("blank.txt", bytes(" \n"));
    w.add("badtext.jpg", image(image_format::jpeg, 7));
    w.add("badtext.txt", std::vector<uint8_t>{0xC3, 0x28});
    w.add("misnamed.jpeg", image(image_format::png, 8));
    w.add("misnamed.txt", bytes("a PNG named .jpeg"));
    w.finish();
  }
  {
    // A damaged header in the middle of an otherwise good shard.
    msomni::data::tar_writer w((d / "shard-000002.tar").string());
    for (int i = 0; i < 3; ++i) {
      w.add("k" + std::to_string(i) + ".jpg", image(image_format::jpeg, 10 + i));
      w.add("k" + std::to_string(i) + ".txt", bytes("a shape"));
    }
    w.finish();
  }
  {
    std::fstream f(d / "shard-000002.tar", std::ios::in | std::ios::out | std::ios::binary);
    // The third member's header (k1.jpg): after k0.jpg's header + data and k0.txt's header + data.
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t at = all.find("k1.jpg");
    REQUIRE(at != std::string::npos);
    f.seekp(std::streamoff(at + 148));  // the checksum field
    f.write("garbage!", 8);
  }
  const auto damaged = run_command(cli + " dataset check " + d.string());
  CAPTURE(damaged.output);
  CHECK(damaged.exit_code == 1);
  for (const char* line : {"shard-000001.tar/scrambled: corrupt_image", "shard-000001.tar/nocaption: missing_member",
                           "shard-000001.tar/blank: empty_caption", "shard-000001.tar/badtext: invalid_utf8",
                           "shard-000001.tar/misnamed: mismatched_name", "shard-000002.tar: bad_tar_header"})
    CHECK(damaged.output.find(line) != std::string::npos);
  const auto json_file = dir.path() / "check.json";
  const auto json = run_command(cli + " dataset check --json " + d.string() + " > " + json_file.string());
  CHECK(json.exit_code == 1);
  CHECK(json.output.empty());  // nothing on stderr: FFmpeg's own complaints are silenced
  const auto j = nlohmann::json::parse(read_text(json_file));
  CHECK(j.at("clean") == false);
  CHECK(j.at("shards").size() == 3);
  CHECK(j.at("problems_total").get<uint64_t>() >= 6);
  CHECK(j.at("samples").at("image").get<uint64_t>() >= 4);  // 3 good, the misnamed one decodes too
  // A clean shard alone, named by a brace pattern, and bad usage.
  CHECK(run_command(cli + " dataset check '" + d.string() + "/shard-{000000,000000}.tar'").exit_code == 0);
  const auto missing = run_command(cli + " dataset check " + (dir.path() / "nowhere").string());
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("does not exist") != std::string::npos);
  CHECK(run_command(cli + " dataset check '" + d.string() + "/x-*.tar'").exit_code == 2);
  CHECK(run_command(cli + " dataset check --modality sound " + d.string()).exit_code == 2);
  CHECK(run_command(cli + " dataset pack --out " + (dir.path() / "o").string()).exit_code == 2);
}

TEST_CASE("a source pattern that matches no shard or is malformed is refused at its place in the config") {
  msomni::testing::temp_dir dir;
  fs::create_directories(dir.path() / "shards");
  {
    msomni::data::tar_writer w((dir.path() / "shards" / "shard-000000.tar").string());
    w.add("a.jpg", image(msomni::gen::image_format::jpeg, 1));
    w.add("a.txt", bytes("a shape"));
    w.finish();
  }
  const fs::path cfg = dir.path() / "job.toml";
  auto dry = [&](const std::string& uri) {
    std::ofstream(cfg) << job_text(uri, 3);
    return run_command("cd / && " + std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --dry-run");
  };
  const auto none = dry("shards/shard-00001?.tar");
  CAPTURE(none.output);
  CHECK(none.exit_code == 2);
  CHECK(std::regex_search(none.output,
                          std::regex("job\\.toml:\\d+:\\d+: data\\.sources\\[0\\]\\.uri: pattern \\S*shards/shard-00001\\?\\.tar "
                                     "matches no shard")));
  CHECK(none.output.find("does not exist") == std::string::npos);
  const auto malformed = dry("shards/shard-{000000..000003.tar");
  CAPTURE(malformed.output);
  CHECK(malformed.exit_code == 2);
  CHECK(std::regex_search(malformed.output, std::regex("job\\.toml:\\d+:\\d+: data\\.sources\\[0\\]\\.uri: malformed pattern: "
                                                       "unclosed '\\{'")));
  for (const char* good : {"shards/shard-00000?.tar", "shards/shard-{000000..000003}.tar", "shards/*.tar"}) {
    const auto ok = dry(good);
    CAPTURE(good);
    CAPTURE(ok.output);
    CHECK(ok.exit_code == 0);
  }
}
