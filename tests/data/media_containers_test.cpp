// The media people actually have, made by the ffmpeg program in the test: WebM (VP9),
// Matroska (H.264), AVI (MPEG-4 part 2), MOV, a fragmented MP4 (frag_keyframe+empty_moov, as
// recorders write it) and a plain MP4; WebP, GIF, BMP, PNG and JPEG images. Each decodes in
// full and keyframe-only; `msomni dataset pack` packs them by their bytes, keeping each
// member's own extension, and refuses what training would refuse with the cause; a short
// msomni-run job trains on them, and a damaged file drawn in training is named with its
// shard, key, cause and draws in summary.json, summary.txt and `msomni status`.
#include "media_decoder.hpp"
#include "media_format.hpp"
#include "support/process_runner.hpp"
#include "tar_format.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <map>

namespace fs = std::filesystem;
using msomni::testing::read_text;
using msomni::testing::run_command;
namespace data = msomni::data;

namespace {

const std::string cli = MSOMNI_CLI_BINARY;

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// One ffmpeg run from a synthetic source; REQUIREs that it made the file.
void make_media(const std::string& input, const std::string& codec, const fs::path& out) {
  const auto r = run_command("ffmpeg -nostdin -loglevel error -y " + input + " " + codec + " '" + out.string() + "'");
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::file_size(out) > 0);
}

const std::string clip_source = "-f lavfi -i testsrc=size=64x48:rate=12 -t 2";
const std::string picture_source = "-f lavfi -i testsrc=size=40x30 -frames:v 1";

// name -> ffmpeg output options; the extension is the container.
const std::map<std::string, std::string> videos = {
    {"vp9.webm", "-c:v libvpx-vp9 -g 12"},
    {"h264.mkv", "-c:v libx264 -pix_fmt yuv420p -g 12"},
    {"mpeg4.avi", "-c:v mpeg4 -g 12"},
    {"quicktime.mov", "-c:v libx264 -pix_fmt yuv420p -g 12"},
    {"fragmented.mp4", "-c:v libx264 -pix_fmt yuv420p -g 12 -movflags frag_keyframe+empty_moov"},
    {"plain.mp4", "-c:v libx264 -pix_fmt yuv420p -g 12"},
};
const std::vector<std::string> images = {"pic_webp.webp", "pic_gif.gif", "pic_bmp.bmp", "pic_png.png", "pic_jpg.jpg"};

data::raw_sample raw_of(const fs::path& p, msomni::modality kind) {
  data::raw_sample r;
  r.kind = kind;
  r.key = p.filename().string();
  r.media = file_bytes(p);
  r.media_ext = p.extension().string().substr(1);
  r.caption = "a test pattern";
  return r;
}

}  // namespace

TEST_CASE("every container and image format ffmpeg makes decodes in full and keyframe-only, by its bytes") {
  msomni::testing::temp_dir dir;
  data::media_decoder dec({16, 3, 64});
  for (const auto& [name, codec] : videos) {
    CAPTURE(name);
    make_media(clip_source, codec, dir.path() / name);
    const auto raw = raw_of(dir.path() / name, msomni::modality::video);
    CHECK(data::accepted_format(msomni::modality::video, data::sniff_media_format(raw.media)));
    for (bool keyframe_only : {false, true}) {
      CAPTURE(keyframe_only);
      const auto d = dec.decode(raw, keyframe_only);
      CAPTURE(d.cause);
      CHECK_FALSE(d.bad);
      CHECK(d.frames == 3);
      CHECK(d.pixels.size() == size_t(3 * 16 * 16 * 3));
      CHECK(d.mismatched_as.empty());
    }
  }
  for (const auto& name : images) {
    CAPTURE(name);
    make_media(picture_source, "", dir.path() / name);
    const auto raw = raw_of(dir.path() / name, msomni::modality::image);
    const auto stated = data::image_pixel_size(data::sniff_media_format(raw.media), raw.media);
    {
      REQUIRE(stated);
      CHECK(stated->width == 40);
      CHECK(stated->height == 30);
    }
    const auto d = dec.decode(raw, false);
    CAPTURE(d.cause);
    CHECK_FALSE(d.bad);
    CHECK(d.frames == 1);
  }
  // A WebM named .mp4 decodes by its bytes and is marked; a cut MP4 is refused with its cause.
  auto misnamed = raw_of(dir.path() / "vp9.webm", msomni::modality::video);
  misnamed.media_ext = "mp4";
  const auto m = dec.decode(misnamed, false);
  CHECK_FALSE(m.bad);
  CHECK(m.mismatched_as == "mkv");
  auto cut = raw_of(dir.path() / "plain.mp4", msomni::modality::video);
  cut.media.resize(cut.media.size() / 2);
  const auto c = dec.decode(cut, false);
  CHECK(c.bad);
  CHECK(c.reason == data::bad_reason::corrupt_video);
  CHECK(c.cause.find("MP4/MOV") != std::string::npos);
  auto text = raw_of(dir.path() / "plain.mp4", msomni::modality::image);
  const auto t = dec.decode(text, false);
  CHECK(t.bad);
  CHECK(t.cause.find("MP4/MOV video, not an image") != std::string::npos);
}

TEST_CASE("pack and train on every container and image format, a damaged file named in the summary and msomni status") {
  msomni::testing::temp_dir dir;
  const fs::path clips = dir.path() / "clips", photos = dir.path() / "photos";
  fs::create_directories(clips);
  fs::create_directories(photos);
  for (const auto& [name, codec] : videos) {
    make_media(clip_source, codec, clips / name);
    write_text(clips / (fs::path(name).stem().string() + ".txt"), "a moving test pattern in " + name);
  }
  write_text(clips / "notes.webm", "not a video at all");
  write_text(clips / "notes.txt", "the caption of a file that is no video");
  for (const auto& name : images) {
    make_media(picture_source, "", photos / name);
    write_text(photos / (fs::path(name).stem().string() + ".txt"), "a test pattern as " + name);
  }

  const fs::path video_shards = dir.path() / "video_shards", image_shards = dir.path() / "image_shards";
  const auto pv = run_command(cli + " dataset pack --videos " + clips.string() + " --out " + video_shards.string() +
                              " --per-shard 3");
  CAPTURE(pv.output);
  REQUIRE(pv.exit_code == 0);
  CHECK(pv.output.find("packed 6 samples into 2 shards") != std::string::npos);
  CHECK(pv.output.find("notes.webm: named .webm but its bytes are no video format msomni decodes; convert it with") !=
        std::string::npos);
  CHECK(pv.output.find("notes.txt") == std::string::npos);  // its media file was judged: no second line
  const std::string packed = read_text(video_shards / "shard-000000.tar") + read_text(video_shards / "shard-000001.tar");
  for (const char* member : {"vp9.webm", "h264.mkv", "mpeg4.avi", "quicktime.mov", "fragmented.mp4", "plain.mp4"})
    CHECK(packed.find(member) != std::string::npos);

  const auto pi = run_command(cli + " dataset pack --images " + photos.string() + " --out " + image_shards.string());
  CAPTURE(pi.output);
  REQUIRE(pi.exit_code == 0);
  CHECK(pi.output.find("packed 5 samples into 1 shard") != std::string::npos);

  // A damaged clip in a shard of its own, as a copy gone wrong leaves one.
  {
    data::tar_writer w((video_shards / "shard-000002.tar").string());
    auto cut = file_bytes(clips / "plain.mp4");
    cut.resize(cut.size() / 2);
    w.add("cut_clip.mp4", cut);
    const std::string caption = "half a clip";
    w.add("cut_clip.txt", std::span(reinterpret_cast<const uint8_t*>(caption.data()), caption.size()));
    w.finish();
  }
  const auto check = run_command(cli + " dataset check " + video_shards.string());
  CAPTURE(check.output);
  CHECK(check.exit_code == 1);
  CHECK(check.output.find("shard-000002.tar/cut_clip: corrupt_video") != std::string::npos);

  const fs::path cfg = dir.path() / "job.toml";
  std::ofstream(cfg) << "[job]\nname = \"containers\"\n"
                        "[model]\nname = \"fuyu-tiny\"\nd_model = 32\nn_layers = 1\nn_heads = 2\nd_ff = 64\n"
                        "image_size = 16\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = 96\n"
                        "[[data.sources]]\nname = \"clips\"\nuri = \"video_shards\"\nmodality = \"video\"\n"
                        "[[data.sources]]\nname = \"photos\"\nuri = \"image_shards\"\nmodality = \"image\"\n"
                        "[training]\nglobal_batch = 4\nmicro_batch = 2\ngrad_accum = 2\nsteps = 8\nlr = 1e-3\nseed = 5\n"
                        "[elasticity]\nreplicas = 1\nmin_replicas = 1\nmax_replicas = 1\n"
                        "[checkpoint]\ninterval_steps = 100000\n";
  const fs::path run_dir = dir.path() / "run";
  const auto run = run_command("cd / && timeout 240 " + std::string(MSOMNI_RUN_BINARY) + " " + cfg.string() + " --run-dir " +
                               run_dir.string());
  CAPTURE(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("bad_sample: shard-000002.tar/cut_clip: corrupt_video (") != std::string::npos);

  const auto summary = nlohmann::json::parse(read_text(run_dir / "summary.json"));
  const auto& bad = summary.at("bad_samples");
  CAPTURE(bad.dump());
  REQUIRE(bad.at("samples").size() == 1);
  const auto& s = bad.at("samples").at(0);
  CHECK(s.at("shard") == "shard-000002.tar");
  CHECK(s.at("key") == "cut_clip");
  CHECK(s.at("reason") == "corrupt_video");
  CHECK(s.at("cause").get<std::string>().find("MP4/MOV") != std::string::npos);
  // Draws agree with the count by reason: the listing and the counts come from one snapshot.
  CHECK(s.at("draws") == bad.at("by_reason").at("corrupt_video"));
  CHECK(summary.at("mismatched_names") == 0);

  const auto status = run_command(cli + " status --run-dir " + run_dir.string());
  CAPTURE(status.output);
  CHECK(status.exit_code == 0);
  CHECK(status.output.find("shard-000002.tar/cut_clip  corrupt_video x") != std::string::npos);
  CHECK(status.output.find(s.at("cause").get<std::string>()) != std::string::npos);
}
