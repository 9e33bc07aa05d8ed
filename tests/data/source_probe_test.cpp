// The start-up check of a source (source_probe.hpp): what it accepts, what it refuses and
// why, and that it stays cheap: it stops at the first usable sample and reads headers only.
#include "data_test_support.hpp"
#include "source_probe.hpp"
#include "tar_format.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>

using namespace msomni;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Local files, counting reads and bytes read.
class counting_storage final : public data::storage {
 public:
  std::vector<std::string> list_shards(const std::string& uri) const override { return inner_->list_shards(uri); }
  std::unique_ptr<data::byte_source> open(const std::string& path) const override {
    auto f = inner_->open(path);
    if (!f) return nullptr;
    return std::make_unique<counted>(std::move(f), reads_, bytes_);
  }
  uint64_t reads() const { return *reads_; }
  uint64_t bytes_read() const { return *bytes_; }

 private:
  struct counted final : data::byte_source {
    counted(std::unique_ptr<data::byte_source> f, std::shared_ptr<std::atomic<uint64_t>> r, std::shared_ptr<std::atomic<uint64_t>> b)
        : file(std::move(f)), reads(std::move(r)), bytes(std::move(b)) {}
    uint64_t size() const override { return file->size(); }
    size_t read_at(uint64_t offset, void* dst, size_t n) const override {
      ++*reads;
      *bytes += n;
      return file->read_at(offset, dst, n);
    }
    std::unique_ptr<data::byte_source> file;
    std::shared_ptr<std::atomic<uint64_t>> reads, bytes;
  };
  std::shared_ptr<data::storage> inner_ = data::make_local_storage();
  std::shared_ptr<std::atomic<uint64_t>> reads_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<uint64_t>> bytes_ = std::make_shared<std::atomic<uint64_t>>(0);
};

constexpr uint64_t bound = 256u << 20;

}  // namespace

TEST_CASE("the source check stops at the first usable sample and reads only headers and one caption") {
  testing::temp_dir dir;
  {
    data::tar_writer w((dir.path() / "a.tar").string());
    w.add("000.jpg", bytes("jpeg bytes are not decoded here"));
    w.add("000.txt", bytes("a caption"));
    for (int i = 1; i < 2000; ++i) w.add(std::to_string(100000 + i) + ".txt", bytes(std::string(2000, 'x')));
    w.finish();
  }
  counting_storage st;
  CHECK(data::usable_source_problem(st, dir.path().string(), modality::image, bound).empty());
  CHECK(st.reads() <= 6);          // a few headers and the caption, not 4000 headers
  CHECK(st.bytes_read() < 8192);
}

TEST_CASE("the source check refuses what no rank could use, saying what it found") {
  testing::temp_dir dir;
  counting_storage st;
  const auto probe = [&](const std::string& sub, modality kind) {
    return data::usable_source_problem(st, (dir.path() / sub).string(), kind, bound);
  };
  std::filesystem::create_directories(dir.path() / "empty");
  CHECK(probe("empty", modality::image).find("no .tar shards") != std::string::npos);

  std::filesystem::create_directories(dir.path() / "zero");
  std::ofstream(dir.path() / "zero" / "a.tar");
  CHECK(probe("zero", modality::text).find("1 shard, all without a tar member") != std::string::npos);

  std::filesystem::create_directories(dir.path() / "blank");
  {
    data::tar_writer w((dir.path() / "blank" / "a.tar").string());
    w.add("0.txt", bytes("  \n"));
    w.add("1.txt", bytes(""));
    w.finish();
  }
  const auto blank = probe("blank", modality::text);
  CAPTURE(blank);
  CHECK(blank.find("2 samples, none has a .txt caption") != std::string::npos);

  std::filesystem::create_directories(dir.path() / "video");
  {
    data::tar_writer w((dir.path() / "video" / "a.tar").string());
    w.add("0.mp4", bytes("a video"));
    w.add("0.txt", bytes("its caption"));
    w.finish();
  }
  const auto as_image = probe("video", modality::image);
  CAPTURE(as_image);
  CHECK(as_image.find("members seen: .mp4, .txt") != std::string::npos);
  CHECK(probe("video", modality::video).empty());
  // Over the bound: named as such.
  const auto small = data::usable_source_problem(st, (dir.path() / "video").string(), modality::video, 4);
  CAPTURE(small);
  CHECK(small.find("io.max_sample_bytes") != std::string::npos);
}
