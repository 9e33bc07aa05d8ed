// Media are decoded by what their bytes are: a PNG named .jpeg (or a JPEG named .png) is a
// good sample, counted as a mismatched name and not as bad; bytes of no accepted format stay
// corrupt, whatever the name.
#include "data_test_support.hpp"
#include "media_decoder.hpp"
#include "media_format.hpp"
#include "mismatched_names.hpp"
#include "scene.hpp"
#include "tar_format.hpp"

#include <doctest/doctest.h>

using namespace msomni;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> image(gen::image_format f, int seed) {
  auto rng = rng_stream::derive(uint64_t(seed), "test.media_format");
  std::vector<uint8_t> rgb;
  gen::render(gen::random_scene(rng, false), 32, 0, 1, rgb);
  return gen::encode_image(rgb, 32, f);
}

data::raw_sample raw(std::vector<uint8_t> media, std::string ext, uint32_t source = 0) {
  data::raw_sample r;
  r.key = "shard.tar/" + std::to_string(media.size());
  r.kind = modality::image;
  r.pos.source = source;
  r.media = std::move(media);
  r.media_ext = std::move(ext);
  r.caption = "a shape";
  return r;
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("media formats are recognised by their first bytes") {
  gen::quiet_ffmpeg_logs();
  CHECK(data::sniff_media_format(image(gen::image_format::jpeg, 1)) == "jpg");
  CHECK(data::sniff_media_format(image(gen::image_format::png, 1)) == "png");
  const std::vector<uint8_t> mp4_head{0, 0, 0, 0x20, 'f', 't', 'y', 'p', 'i', 's', 'o', 'm'};
  CHECK(data::sniff_media_format(mp4_head) == "mp4");
  CHECK(data::sniff_media_format(bytes("not an image at all")) == "");
  CHECK(data::sniff_media_format({}) == "");
  // Only another accepted format of the same modality counts as a mismatch.
  CHECK(data::choose_media_format(modality::image, "jpg", image(gen::image_format::png, 1)).mismatched_name);
  CHECK_FALSE(data::choose_media_format(modality::image, "png", image(gen::image_format::png, 1)).mismatched_name);
  CHECK_FALSE(data::choose_media_format(modality::image, "png", mp4_head).mismatched_name);
  CHECK_FALSE(data::choose_media_format(modality::video, "mp4", image(gen::image_format::png, 1)).mismatched_name);
}

TEST_CASE("every container and image family is recognised by its first bytes and named by its extensions") {
  const auto head = [](std::initializer_list<int> b, std::string tail = {}) {
    std::vector<uint8_t> v;
    for (int x : b) v.push_back(uint8_t(x));
    v.insert(v.end(), tail.begin(), tail.end());
    v.resize(std::max<size_t>(v.size(), 32), 0);
    return v;
  };
  CHECK(data::sniff_media_format(head({}, "RIFF\x10\x01\x01\x01WEBPVP8 ")) == "webp");
  CHECK(data::sniff_media_format(head({}, "RIFF\x10\x01\x01\x01" "AVI LIST")) == "avi");
  CHECK(data::sniff_media_format(head({}, "GIF89a")) == "gif");
  CHECK(data::sniff_media_format(head({'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0})) == "bmp");
  CHECK(data::sniff_media_format(head({'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 99, 0, 0, 0})) == "");  // no DIB size
  CHECK(data::sniff_media_format(head({0x1A, 0x45, 0xDF, 0xA3})) == "mkv");
  CHECK(data::sniff_media_format(head({0, 0, 0, 8}, "moov")) == "mp4");  // QuickTime without ftyp
  CHECK(data::sniff_media_format(head({}, "II*")) == "");                // TIFF: not decoded
  for (const char* ext : {"mp4", "m4v", "mov"}) CHECK(data::format_of_extension(ext) == "mp4");
  for (const char* ext : {"mkv", "webm"}) CHECK(data::format_of_extension(ext) == "mkv");
  CHECK(data::format_of_extension("jpeg") == "jpg");
  CHECK(data::format_of_extension("tiff") == "");
  CHECK(data::kind_of_format("webp") == modality::image);
  CHECK(data::kind_of_format("avi") == modality::video);
  CHECK(data::accepted_format(modality::video, "mkv"));
  CHECK_FALSE(data::accepted_format(modality::image, "mkv"));
  CHECK_FALSE(data::accepted_format(modality::text, "jpg"));
  // A .mov that is an ISO file and a .webm that is Matroska name their own family: no mismatch.
  CHECK_FALSE(data::choose_media_format(modality::video, "mov", head({0, 0, 0, 8}, "ftypisom")).mismatched_name);
  CHECK_FALSE(data::choose_media_format(modality::video, "webm", head({0x1A, 0x45, 0xDF, 0xA3})).mismatched_name);
  CHECK(data::choose_media_format(modality::video, "mp4", head({0x1A, 0x45, 0xDF, 0xA3})).mismatched_name);
}

TEST_CASE("bad data counts name each distinct sample once with its draws, bounded, and merge") {
  data::bad_data_counts a, b;
  a.add(data::bad_reason::corrupt_video, "s0.tar/clip", "a cut file");
  a.add(data::bad_reason::corrupt_video, "s0.tar/clip", "a cut file");
  a.add_mismatched("s0.tar/cat", "png");
  b.add(data::bad_reason::corrupt_video, "s0.tar/clip", "a cut file");
  a.merge(b);
  CHECK(a[data::bad_reason::corrupt_video] == 3);
  CHECK(a.samples.at("s0.tar/clip").draws == 3);
  CHECK(a.samples.at("s0.tar/clip").cause == "a cut file");
  CHECK(a.samples.at("s0.tar/cat").reason == "mismatched_name");
  CHECK(a.samples.at("s0.tar/cat").cause.find("PNG") != std::string::npos);
  CHECK(a.mismatched == 1);
  CHECK(a.total() == 3);  // a mismatched name is no bad sample
  data::bad_data_counts many;
  for (size_t i = 0; i < data::bad_data_counts::samples_max + 3; ++i) many.add(data::bad_reason::too_large, "k" + std::to_string(i));
  CHECK(many.samples.size() == data::bad_data_counts::samples_max);
  CHECK(many.unlisted_draws == 3);
}

TEST_CASE("a PNG named .jpeg and a JPEG named .png decode by their bytes and are marked mismatched") {
  gen::quiet_ffmpeg_logs();
  data::media_decoder dec({16, 2, 64});
  const auto png = image(gen::image_format::png, 2), jpeg = image(gen::image_format::jpeg, 2);
  const auto as_png = dec.decode(raw(png, "png"), false);
  REQUIRE_FALSE(as_png.bad);
  CHECK(as_png.mismatched_as.empty());
  const auto misnamed = dec.decode(raw(png, "jpg"), false);  // the reader maps .jpeg to "jpg"
  REQUIRE_FALSE(misnamed.bad);
  CHECK(misnamed.mismatched_as == "png");
  CHECK(misnamed.pixels == as_png.pixels);
  const auto jpeg_as_png = dec.decode(raw(jpeg, "png"), false);
  REQUIRE_FALSE(jpeg_as_png.bad);
  CHECK(jpeg_as_png.mismatched_as == "jpg");
  // Bytes of no accepted format stay corrupt, under either name.
  for (const char* ext : {"jpg", "png"}) {
    const auto junk = dec.decode(raw(bytes("definitely not pixels"), ext), false);
    CHECK(junk.bad);
    CHECK(junk.reason == data::bad_reason::corrupt_image);
    CHECK(junk.mismatched_as.empty());
  }
  // The note counts every mismatch and is bounded by sources in what it remembers.
  data::mismatched_names note;
  CHECK(note.note(misnamed));
  CHECK(note.note(misnamed));
  CHECK_FALSE(note.note(as_png));
  CHECK(note.count() == 2);
}

TEST_CASE("a source of PNGs named .jpeg trains: counted as mismatched names, not as bad samples") {
  gen::quiet_ffmpeg_logs();
  testing::temp_dir dir;
  {
    data::tar_writer w((dir.path() / "a.tar").string());
    for (int i = 0; i < 6; ++i) {
      const std::string key = "00000" + std::to_string(i);
      w.add(key + (i % 2 == 0 ? ".jpeg" : ".png"), image(gen::image_format::png, i));
      w.add(key + ".txt", bytes("a shape number " + std::to_string(i)));
    }
    w.finish();
  }
  config::job_config job;
  job.training.micro_batch = 2;
  job.model.image_size = 16;
  job.model.max_seq_len = 64;
  job.data.shuffle = false;
  job.data.sources = {{"src", dir.path().string(), 1.0, modality::image}};
  data::data_pipeline p(data::make_pipeline_setup(job), {0, 1, 1, 2});
  for (int i = 0; i < 3; ++i) {
    const auto b = p.next_batch();
    for (auto r : b.replaced) CHECK(r == 0);
  }
  CHECK(p.bad_data().total() == 0);
  // Keys 0, 2 and 4 of each epoch decoded so far (the pipeline may have decoded ahead).
  const uint64_t mismatched = p.metrics().mismatched_name;
  CHECK(mismatched >= 3);
  CHECK(mismatched <= p.metrics().decoded[size_t(modality::image)]);
  CHECK(p.metrics().report().find("mismatched names " + std::to_string(mismatched)) != std::string::npos);
}
