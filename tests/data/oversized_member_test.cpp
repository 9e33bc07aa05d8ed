// A tar member's size comes from its header, so a shard can claim a member of any size. The
// reader bounds what it reads (io.max_sample_bytes): a larger member is skipped by its header
// size without its bytes being read, counted as too_large, and the samples after it are read.
// The shards here are sparse files, so a 1 GiB member costs no disk and no write time.
#include "data_test_support.hpp"
#include "scene.hpp"
#include "tar_format.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>

using namespace msomni;

namespace {

std::vector<uint8_t> jpeg(int seed) {
  rng_stream rng = rng_stream::derive(uint64_t(seed), "test.oversized");
  std::vector<uint8_t> rgb;
  gen::render(gen::random_scene(rng, false), 32, 0, 1, rgb);
  return gen::encode_image(rgb, 32, gen::image_format::jpeg);
}

// Appends members to a tar by hand so one can claim `claimed` bytes it never writes (a hole).
class sparse_tar {
 public:
  explicit sparse_tar(const std::string& path) : out_(path, std::ios::binary | std::ios::trunc) {}
  void add(const std::string& name, const std::vector<uint8_t>& bytes) { put(name, bytes, bytes.size()); }
  void add_hole(const std::string& name, uint64_t claimed) { put(name, {}, claimed); }
  void finish() {
    static const char zeros[2 * data::tar_block_size] = {};
    out_.seekp(std::streamoff(at_));
    out_.write(zeros, sizeof zeros);
    out_.close();
  }

 private:
  void put(const std::string& name, const std::vector<uint8_t>& bytes, uint64_t size) {
    const auto header = data::make_ustar_header(name, size);
    out_.seekp(std::streamoff(at_));
    out_.write(header.data(), header.size());
    out_.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    at_ += data::tar_block_size + (size + data::tar_block_size - 1) / data::tar_block_size * data::tar_block_size;
  }
  std::ofstream out_;
  uint64_t at_ = 0;
};

// Local files, remembering the largest single read asked of any of them.
class read_recording_storage final : public data::storage {
 public:
  std::vector<std::string> list_shards(const std::string& uri) const override { return inner_->list_shards(uri); }
  std::unique_ptr<data::byte_source> open(const std::string& path) const override {
    auto f = inner_->open(path);
    if (!f) return nullptr;
    return std::make_unique<recorded>(std::move(f), largest_);
  }
  uint64_t largest_read() const { return *largest_; }

 private:
  struct recorded final : data::byte_source {
    recorded(std::unique_ptr<data::byte_source> f, std::shared_ptr<std::atomic<uint64_t>> l) : file(std::move(f)), largest(std::move(l)) {}
    uint64_t size() const override { return file->size(); }
    size_t read_at(uint64_t offset, void* dst, size_t n) const override {
      uint64_t seen = *largest;
      while (n > seen && !largest->compare_exchange_weak(seen, n)) {
      }
      return file->read_at(offset, dst, n);
    }
    std::unique_ptr<data::byte_source> file;
    std::shared_ptr<std::atomic<uint64_t>> largest;
  };
  std::shared_ptr<data::storage> inner_ = data::make_local_storage();
  std::shared_ptr<std::atomic<uint64_t>> largest_ = std::make_shared<std::atomic<uint64_t>>(0);
};

std::vector<uint8_t> text(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("a member larger than io.max_sample_bytes is skipped unread and counted as too_large") {
  testing::temp_dir dir;
  const auto shard = (dir.path() / "big.tar").string();
  {
    sparse_tar t(shard);
    t.add("000.jpg", jpeg(0));
    t.add("000.txt", text("a good one before"));
    t.add_hole("001.jpg", (uint64_t{1} << 30) + 7);  // 1 GiB claimed, none of it on disk
    t.add("001.txt", text("the caption of a huge image"));
    t.add("002.jpg", jpeg(2));
    t.add("002.txt", text("a good one after"));
    t.add("003.jpg", jpeg(3));
    t.add("003.txt", text("another good one"));
    t.finish();
  }
  config::job_config job;
  job.training.micro_batch = 2;
  job.model.image_size = 16;
  job.model.max_seq_len = 64;
  job.data.shuffle = false;
  job.data.sources = {{"src", dir.path().string(), 1.0, modality::image}};
  auto st = std::make_shared<read_recording_storage>();
  data::data_pipeline p(data::make_pipeline_setup(job), {0, 1, 1, 2}, st);
  std::set<std::string> delivered;
  for (int i = 0; i < 2; ++i)  // one epoch: draws 0..3
    for (const auto& k : p.next_batch().keys) delivered.insert(k);
  // Under the default bound (256 MiB); counted once per read of the sample (a replacement
  // attempt that meets it again counts nothing).
  const auto report = p.bad_data().report();
  CAPTURE(report);
  CHECK(report.find("too_large=1") != std::string::npos);
  CHECK(p.bad_data().total() == 1);
  CHECK(delivered.count("big.tar/001") == 0);
  for (const char* k : {"big.tar/000", "big.tar/002", "big.tar/003"}) CHECK_MESSAGE(delivered.count(k) == 1, k);
  CHECK(st->largest_read() < (uint64_t{1} << 20));  // never near the member's claimed size
}
TEST_CASE("io.max_sample_bytes bounds a caption member as well, and is read from the config") {
  testing::temp_dir dir;
  {
    sparse_tar t((dir.path() / "a.tar").string());
    t.add("000.txt", text("short text"));
    t.add_hole("001.txt", 5u << 20);  // 5 MiB of caption
    t.add("002.txt", text("more short text"));
    t.finish();
  }
  config::job_config job;
  job.training.micro_batch = 2;
  job.model.image_size = 16;
  job.model.max_seq_len = 64;
  job.data.shuffle = false;
  job.io.max_sample_bytes = 1 << 20;
  job.data.sources = {{"txt", dir.path().string(), 1.0, modality::text}};
  auto st = std::make_shared<read_recording_storage>();
  data::data_pipeline p(data::make_pipeline_setup(job), {0, 1, 1, 2}, st);
  for (int i = 0; i < 2; ++i) p.next_batch();
  CHECK(p.bad_data()[data::bad_reason::too_large] >= 1);
  CHECK(st->largest_read() <= (uint64_t{1} << 20));
}

TEST_CASE("a zero-byte media member is missing_member in training, as msomni dataset check and the pre-start probe say") {
  testing::temp_dir dir;
  const auto shard = (dir.path() / "empty.tar").string();
  {
    sparse_tar t(shard);
    t.add("000.jpg", jpeg(0));
    t.add("000.txt", text("a good one before"));
    t.add("001.jpg", {});  // present, but zero bytes
    t.add("001.txt", text("the caption of an empty file"));
    t.add("002.jpg", jpeg(2));
    t.add("002.txt", text("a good one after"));
    t.add("003.jpg", jpeg(3));
    t.add("003.txt", text("another good one"));
    t.finish();
  }
  config::job_config job;
  job.training.micro_batch = 2;
  job.model.image_size = 16;
  job.model.max_seq_len = 64;
  job.data.shuffle = false;
  job.data.sources = {{"src", dir.path().string(), 1.0, modality::image}};
  data::data_pipeline p(data::make_pipeline_setup(job), {0, 1, 1, 2}, data::make_local_storage());
  for (int i = 0; i < 2; ++i) p.next_batch();
  const auto report = p.bad_data().report();
  CAPTURE(report);
  CHECK(report.find("missing_member=1") != std::string::npos);
  CHECK(report.find("corrupt_image") == std::string::npos);
}
