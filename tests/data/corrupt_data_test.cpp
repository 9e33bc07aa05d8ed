// Acceptance: bad data. Each damage the pipeline must survive is planted in hand-built
// shards; reading one epoch must skip exactly those samples, count each under its reason,
// deliver every good sample, and leave no hole: every slot is filled, and the slots whose own
// sample was bad (replaced by the next good one of the source) are exactly the counted ones.
#include "data_test_support.hpp"
#include "scene.hpp"
#include "tar_format.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <set>

using namespace msomni;
using data::bad_reason;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> image(int seed, gen::image_format f) {
  rng_stream rng = rng_stream::derive(uint64_t(seed), "test.image");
  std::vector<uint8_t> rgb;
  gen::render(gen::random_scene(rng, false), 32, 0, 1, rgb);
  return gen::encode_image(rgb, 32, f);
}

std::vector<uint8_t> video(int seed) {
  rng_stream rng = rng_stream::derive(uint64_t(seed), "test.video");
  const auto s = gen::random_scene(rng, true);
  std::vector<std::vector<uint8_t>> frames(16);
  for (int t = 0; t < 16; ++t) gen::render(s, 32, t, 16, frames[size_t(t)]);
  return gen::encode_mp4(frames, {32, 10, 8});
}

std::vector<uint8_t> cut(std::vector<uint8_t> b, double keep) {
  b.resize(size_t(double(b.size()) * keep));
  return b;
}

// Reads one source alone until its cursor enters epoch 1. The first two samples of the
// first shard are good, so the one extra batch needed to notice the boundary adds no bad ones.
struct epoch_result {
  data::bad_data_counts bad;
  std::set<std::string> delivered;
  uint64_t samples_read = 0;
  uint64_t replaced = 0;
};

uint64_t sample_level(const data::bad_data_counts& bad) {
  uint64_t n = 0;
  for (auto reason : {bad_reason::missing_member, bad_reason::empty_caption, bad_reason::invalid_utf8,
                      bad_reason::corrupt_image, bad_reason::corrupt_video})
    n += bad[reason];
  return n;
}

epoch_result read_one_epoch(const std::string& dir, modality kind) {
  config::job_config job;
  job.training.micro_batch = 2;
  job.model.image_size = 16;
  job.model.max_seq_len = 64;
  job.data.shuffle = false;
  job.data.sources = {{"src", dir, 1.0, kind}};
  data::data_pipeline p(data::make_pipeline_setup(job), {0, 1, 1, 2});
  epoch_result r;
  uint64_t delivered = 0;
  for (int guard = 0; guard < 100; ++guard) {
    const auto b = p.next_batch();
    const auto c = p.cursors()[0];
    delivered += b.keys.size();
    for (const auto& k : b.keys) r.delivered.insert(k);
    for (auto x : b.replaced) r.replaced += x;
    // No hole: every draw filled a slot, and each counted bad sample cost exactly one
    // replacement, after every batch.
    REQUIRE(c.samples_read == delivered);
    REQUIRE(r.replaced == sample_level(p.bad_data()));
    r.samples_read = c.samples_read;
    if (c.epoch >= 1) break;
  }
  r.bad = p.bad_data();
  return r;
}

}  // namespace

TEST_CASE("damaged images and captions and missing pair members are skipped and counted") {
  testing::temp_dir dir;
  {
    data::tar_writer w((dir.path() / "a.tar").string());
    w.add("000.jpg", image(0, gen::image_format::jpeg));
    w.add("000.txt", bytes("a good one"));
    w.add("001.jpg", image(1, gen::image_format::jpeg));
    w.add("001.txt", bytes("another good one"));
    w.add("002.jpg", cut(image(2, gen::image_format::jpeg), 0.6));  // truncated JPEG
    w.add("002.txt", bytes("cut off"));
    auto garbage = image(3, gen::image_format::jpeg);
    for (size_t i = 2; i + 2 < garbage.size(); ++i) garbage[i] = uint8_t(i * 37);
    w.add("003.jpg", garbage);  // SOI and EOI intact, everything between scrambled
    w.add("003.txt", bytes("scrambled"));
    w.add("004.png", cut(image(4, gen::image_format::png), 0.5));  // truncated PNG
    w.add("004.txt", bytes("half a png"));
    w.add("005.jpg", image(5, gen::image_format::jpeg));
    w.add("005.txt", bytes(" \n\t"));  // blank caption
    w.add("006.png", image(6, gen::image_format::png));
    w.add("006.txt", bytes(""));  // empty caption
    w.add("007.jpg", image(7, gen::image_format::jpeg));
    w.add("007.txt", bytes("bad \xff\xfe utf8"));
    w.add("008.jpg", image(8, gen::image_format::jpeg));
    w.add("008.txt", bytes("overlong \xc0\xaf slash"));
    w.add("009.jpg", image(9, gen::image_format::jpeg));  // no caption
    w.add("010.txt", bytes("a caption without its image"));
    w.add("011.png", image(11, gen::image_format::png));
    w.add("011.txt", bytes("a good png"));
    w.finish();
  }
  const auto r = read_one_epoch(dir.path().string(), modality::image);
  CHECK(r.bad[bad_reason::corrupt_image] == 3);
  CHECK(r.bad[bad_reason::empty_caption] == 2);
  CHECK(r.bad[bad_reason::invalid_utf8] == 2);
  CHECK(r.bad[bad_reason::missing_member] == 2);
  CHECK(r.bad.total() == 9);
  for (const char* good : {"a.tar/000", "a.tar/001", "a.tar/011"}) CHECK_MESSAGE(r.delivered.count(good) == 1, good);
  for (int i = 2; i <= 10; ++i) CHECK_MESSAGE(r.delivered.count("a.tar/" + std::string(i < 10 ? "00" : "0") + std::to_string(i)) == 0, i);
  CHECK(r.bad.report().find("corrupt_image=3") != std::string::npos);
}

TEST_CASE("truncated and damaged MP4s are skipped and counted") {
  testing::temp_dir dir;
  {
    data::tar_writer w((dir.path() / "v.tar").string());
    w.add("000.mp4", video(0));
    w.add("000.txt", bytes("good video"));
    w.add("001.mp4", video(1));
    w.add("001.txt", bytes("good video"));
    w.add("002.mp4", cut(video(2), 0.5));  // moov is at the end: half a file has none
    w.add("002.txt", bytes("truncated"));
    auto zeroed = video(3);
    std::fill(zeroed.begin(), zeroed.begin() + 48, uint8_t{0});
    w.add("003.mp4", zeroed);  // container header wiped
    w.add("003.txt", bytes("wiped"));
    w.add("004.mp4", cut(video(4), 0.97));  // moov itself cut short
    w.add("004.txt", bytes("almost whole"));
    w.add("005.txt", bytes("caption only"));
    w.add("006.mp4", video(6));
    w.add("006.txt", bytes("good video"));
    w.finish();
  }
  const auto r = read_one_epoch(dir.path().string(), modality::video);
  CHECK(r.bad[bad_reason::corrupt_video] == 3);
  CHECK(r.bad[bad_reason::missing_member] == 1);
  CHECK(r.bad.total() == 4);
  CHECK(r.delivered.count("v.tar/006") == 1);
}

TEST_CASE("a bad tar header costs only its member and a truncated shard only its tail") {
  testing::temp_dir dir;
  const auto a = (dir.path() / "a.tar").string(), b = (dir.path() / "b.tar").string();
  {
    // A clean first shard, so starting epoch 1 (to see the boundary) re-meets no damage.
    data::tar_writer z((dir.path() / "0.tar").string());
    z.add("g0.txt", bytes("good"));
    z.add("g1.txt", bytes("also good"));
    z.finish();
    data::tar_writer w(a);
    for (int i = 0; i < 6; ++i) w.add("t" + std::to_string(i) + ".txt", bytes("text sample number " + std::to_string(i)));
    w.finish();
    data::tar_writer v(b);
    for (int i = 0; i < 6; ++i) v.add("u" + std::to_string(i) + ".txt", bytes(std::string(700, char('a' + i))));
    v.finish();
  }
  {
    // Damage the header of t3 (the 4th member: each takes a header and one data block).
    std::fstream f(a, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3 * 2 * 512 + 10);
    f.write("\x01\x02\x03", 3);
  }
  std::filesystem::resize_file(b, 4 * 3 * 512 + 700);  // cut inside u4's data
  const auto r = read_one_epoch(dir.path().string(), modality::text);
  CHECK(r.bad[bad_reason::bad_tar_header] == 1);
  CHECK(r.bad[bad_reason::truncated_shard] == 1);
  CHECK(r.bad.total() == 2);
  CHECK(r.delivered.count("a.tar/t3") == 0);
  for (const char* k : {"a.tar/t0", "a.tar/t2", "a.tar/t4", "a.tar/t5", "b.tar/u0", "b.tar/u3"}) CHECK_MESSAGE(r.delivered.count(k) == 1, k);
  CHECK(r.delivered.count("b.tar/u4") == 0);
}

TEST_CASE("list_tar resynchronises after garbage and reports it once per run") {
  testing::temp_dir dir;
  const auto path = (dir.path() / "x.tar").string();
  {
    data::tar_writer w(path);
    for (int i = 0; i < 4; ++i) w.add("m" + std::to_string(i) + ".txt", bytes(std::string(1500, 'x')));
    w.finish();
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4 * 512 + 148);  // m1's checksum field
    f.write("9999", 4);
  }
  auto st = data::make_local_storage();
  const auto listing = data::list_tar(*st->open(path));
  CHECK(listing.bad_header_runs == 1);
  CHECK_FALSE(listing.truncated);
  REQUIRE(listing.members.size() == 3);
  CHECK(listing.members[1].name == "m2.txt");
}
