// The tar-sample assembler (tar_sample_assembler.hpp): members grouped by key into samples,
// the members a sample of a modality reads, and the raw sample their bytes make, judged.
#include "tar_sample_assembler.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace msomni;
using data::member_use;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Members laid out as a tar lays them out: a header block, then the data padded to a block.
data::tar_listing listing(const std::vector<std::pair<std::string, uint64_t>>& members) {
  data::tar_listing l;
  uint64_t at = 0;
  for (const auto& [name, size] : members) {
    at += data::tar_block_size;
    l.members.push_back({name, at, size});
    at += (size + data::tar_block_size - 1) / data::tar_block_size * data::tar_block_size;
  }
  return l;
}

data::raw_sample start(modality kind, const std::string& key) {
  data::raw_sample s;
  s.kind = kind;
  s.key = key;
  return s;
}

}  // namespace

TEST_CASE("tar samples: members of one key make one sample, in tar order, and a key met again later starts another") {
  const auto l = listing({{"a/0001.jpg", 10}, {"a/0001.txt", 3}, {"0002.seg.png", 5}, {"0002.txt", 2},
                          {"0003.txt", 1}, {"a/0001.json", 4}});
  const data::shard_listing samples = data::group_samples(l);
  REQUIRE(samples.size() == 4);
  CHECK(samples[0].key == "a/0001");
  CHECK(samples[0].members.size() == 2);
  CHECK(samples[1].key == "0002");
  CHECK(samples[1].members[0].name == "0002.seg.png");
  CHECK(samples[2].key == "0003");
  CHECK(samples[3].key == "a/0001");
  CHECK(samples[3].members.size() == 1);
  CHECK(data::group_samples(data::tar_listing{}).empty());
}

TEST_CASE("tar samples: the grouper hands out a sample when the next key arrives, the last one at finish") {
  data::sample_grouper g;
  CHECK_FALSE(g.add({"k1.jpg", 512, 1}));
  CHECK_FALSE(g.add({"k1.txt", 1536, 1}));
  const auto first = g.add({"k2.txt", 2560, 1});
  REQUIRE(first);
  CHECK(first->key == "k1");
  CHECK(first->members.size() == 2);
  const auto last = g.finish();
  REQUIRE(last);
  CHECK(last->key == "k2");
  CHECK_FALSE(g.finish());
}

TEST_CASE("tar samples: member names split at the first dot after the last slash, and each extension has a use") {
  CHECK(data::split_member("dir.v2/000123.seg.jpg") == std::pair<std::string, std::string>{"dir.v2/000123", "seg.jpg"});
  CHECK(data::split_member("noext") == std::pair<std::string, std::string>{"noext", ""});
  CHECK(data::use_of("txt", modality::image) == member_use::caption);
  CHECK(data::use_of("jpg", modality::image) == member_use::media);
  CHECK(data::use_of("jpg", modality::text) == member_use::none);
  CHECK(data::use_of("json", modality::image) == member_use::none);
}

TEST_CASE("tar samples: a sample reads only the members it uses, in one span when they lie together") {
  const auto samples = data::group_samples(listing({{"k.json", 100}, {"k.jpg", 1000}, {"k.txt", 20}}));
  REQUIRE(samples.size() == 1);
  const data::sample_reads plan = data::plan_reads(samples[0], modality::image, 4096);
  CHECK_FALSE(plan.too_large);
  REQUIRE(plan.reads.size() == 2);
  CHECK(plan.reads[0].member->name == "k.jpg");
  CHECK(plan.reads[0].use == member_use::media);
  CHECK(plan.reads[1].use == member_use::caption);
  const auto& jpg = *plan.reads[0].member;
  const auto& txt = *plan.reads[1].member;
  CHECK(plan.span_offset == jpg.data_offset);
  CHECK(plan.span_bytes == txt.data_offset + txt.size - jpg.data_offset);

  // A text sample reads its caption alone: nothing to span.
  const data::sample_reads text = data::plan_reads(samples[0], modality::text, 4096);
  REQUIRE(text.reads.size() == 1);
  CHECK(text.span_bytes == 0);

  // A large member it does not use between two it uses: each is read alone.
  const auto apart = data::group_samples(listing({{"k.jpg", 10}, {"k.json", 1 << 20}, {"k.txt", 10}}));
  const data::sample_reads split = data::plan_reads(apart[0], modality::image, 4096);
  CHECK(split.reads.size() == 2);
  CHECK(split.span_bytes == 0);
}

TEST_CASE("tar samples: a used member over the bound makes the sample too_large and nothing is read") {
  const auto samples = data::group_samples(listing({{"k.jpg", 5000}, {"k.txt", 20}}));
  const data::sample_reads plan = data::plan_reads(samples[0], modality::image, 4096);
  REQUIRE(plan.too_large);
  CHECK(plan.too_large->name == "k.jpg");
  CHECK(plan.reads.empty());
  const data::raw_sample s = data::raw_sample_assembler(start(modality::image, "shard/k")).too_large(*plan.too_large, 4096);
  CHECK(s.bad);
  CHECK(s.reason == data::bad_reason::too_large);
  CHECK(s.cause == "k.jpg is 5000 bytes, over io.max_sample_bytes 4096");
  CHECK(s.key == "shard/k");

  // A large member the sample does not use is no reason.
  CHECK_FALSE(data::plan_reads(samples[0], modality::text, 4096).too_large);
}

TEST_CASE("tar samples: the assembled sample holds its caption and media, judged by the raw stage's rule") {
  const auto samples = data::group_samples(listing({{"k.png", 4}, {"k.txt", 5}}));
  const data::sample_reads plan = data::plan_reads(samples[0], modality::image, 4096);
  REQUIRE(plan.reads.size() == 2);

  data::raw_sample_assembler good(start(modality::image, "s/k"));
  good.add(plan.reads[0], bytes("\x89PNG"), true);
  good.add(plan.reads[1], bytes("hello"), true);
  CHECK(good.has_media());
  CHECK(good.has_caption());
  const data::raw_sample s = std::move(good).finish();
  CHECK_FALSE(s.bad);
  CHECK(s.caption == "hello");
  CHECK(s.media.size() == 4);
  CHECK(s.media_ext == "png");

  SUBCASE("a short read leaves the member absent") {
    data::raw_sample_assembler a(start(modality::image, "s/k"));
    a.add(plan.reads[0], bytes("\x89P"), false);
    a.add(plan.reads[1], bytes("hello"), true);
    const data::raw_sample x = std::move(a).finish();
    CHECK(x.bad);
    CHECK(x.reason == data::bad_reason::missing_member);
  }
  SUBCASE("empty media is as absent as missing media") {
    data::raw_sample_assembler a(start(modality::image, "s/k"));
    a.add(plan.reads[0], {}, true);
    a.add(plan.reads[1], bytes("hello"), true);
    CHECK_FALSE(a.has_media());
    CHECK(std::move(a).finish().reason == data::bad_reason::missing_member);
  }
  SUBCASE("a blank caption and one not UTF-8 are refused with their reasons") {
    data::raw_sample_assembler blank(start(modality::image, "s/k"));
    blank.add(plan.reads[0], bytes("\x89PNG"), true);
    blank.add(plan.reads[1], bytes(" \n\t"), true);
    CHECK(std::move(blank).finish().reason == data::bad_reason::empty_caption);
    data::raw_sample_assembler garbled(start(modality::image, "s/k"));
    garbled.add(plan.reads[0], bytes("\x89PNG"), true);
    garbled.add(plan.reads[1], bytes("\xff\xfe"), true);
    CHECK(std::move(garbled).finish().reason == data::bad_reason::invalid_utf8);
  }
  SUBCASE("a text sample needs only its caption") {
    const data::sample_reads text = data::plan_reads(samples[0], modality::text, 4096);
    data::raw_sample_assembler a(start(modality::text, "s/k"));
    for (const auto& r : text.reads) a.add(r, bytes("words"), true);
    const data::raw_sample x = std::move(a).finish();
    CHECK_FALSE(x.bad);
    CHECK(x.caption == "words");
  }
}
