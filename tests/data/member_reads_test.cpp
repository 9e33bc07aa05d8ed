// Reading a sample's planned members one by one (member_reads.hpp): every member read into the
// assembler, and a read cut short stops the reading and names its member.
#include "member_reads.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

using namespace msomni;

namespace {

// `bytes` as a shard, with only its first `readable` bytes there.
class memory_source final : public data::byte_source {
 public:
  memory_source(std::string bytes, size_t readable) : bytes_(std::move(bytes)), readable_(readable) {}
  uint64_t size() const override { return bytes_.size(); }
  size_t read_at(uint64_t offset, void* dst, size_t n) const override {
    if (offset >= readable_) return 0;
    const size_t k = std::min<size_t>(n, readable_ - size_t(offset));
    std::memcpy(dst, bytes_.data() + offset, k);
    return k;
  }

 private:
  std::string bytes_;
  size_t readable_;
};

data::raw_sample start() {
  data::raw_sample s;
  s.kind = modality::image;
  s.key = "shard/k";
  return s;
}

}  // namespace

TEST_CASE("member reads: each planned member is read into the sample, and a short read names its member") {
  // k.png at 0 (4 bytes), k.json at 4 (not used), k.txt at 10 (5 bytes).
  const std::string shard = std::string("\x89PNG", 4) + "{....}" + "hello";
  data::shard_sample smp{"k", {{"k.png", 0, 4}, {"k.json", 4, 6}, {"k.txt", 10, 5}}};
  const data::sample_reads plan = data::plan_reads(smp, modality::image, 1024);
  REQUIRE(plan.reads.size() == 2);

  data::raw_sample_assembler whole(start());
  CHECK(data::read_members(memory_source(shard, shard.size()), plan, whole) == nullptr);
  const data::raw_sample s = std::move(whole).finish();
  CHECK_FALSE(s.bad);
  CHECK(s.caption == "hello");
  CHECK(s.media.size() == 4);

  data::raw_sample_assembler cut(start());
  const data::tar_member* short_one = data::read_members(memory_source(shard, 12), plan, cut);
  REQUIRE(short_one);
  CHECK(short_one->name == "k.txt");
  CHECK(cut.has_media());
  CHECK_FALSE(cut.has_caption());
  CHECK(std::move(cut).finish().reason == data::bad_reason::missing_member);
}
