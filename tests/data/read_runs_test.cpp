// The read-ahead cores: which upcoming samples of a shard one GET serves (read_runs.hpp) and
// how many upcoming draws a remote source's reader hints at once (read_ahead_window.hpp).
#include "read_ahead_window.hpp"
#include "read_runs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <set>

using namespace msomni::data;

namespace {

// Sample i of a shard of `count` samples of `record` bytes each, its read the record less
// its first header (the span from its first member's data to its last one's end).
run_item sample(uint64_t i, uint64_t record = 2560) {
  const uint64_t b = i * record;
  return {b, b + record, b + 512, b + record - 400};
}

uint64_t records(const std::vector<run_item>& items, const read_run& r) {
  uint64_t n = 0;
  for (size_t i : r.items) n += items[i].record_end - items[i].record_begin;
  return n;
}

// Every item is in exactly one run, and each run covers its items' reads.
void check_cover(const std::vector<run_item>& items, const std::vector<read_run>& runs) {
  std::multiset<size_t> seen;
  for (const auto& r : runs)
    for (size_t i : r.items) {
      seen.insert(i);
      CHECK(items[i].read_begin >= r.offset);
      CHECK(items[i].read_end <= r.offset + r.length);
    }
  CHECK(seen.size() == items.size());
  for (size_t i = 0; i < items.size(); ++i) CHECK(seen.count(i) == 1);
}

}  // namespace

TEST_CASE("a shard's samples drawn in any order form one run from the first read to the last") {
  std::vector<run_item> items;
  for (uint64_t i : {7, 3, 0, 5, 1, 6, 2, 4}) items.push_back(sample(i));
  const auto runs = plan_runs(items);
  REQUIRE(runs.size() == 1);
  check_cover(items, runs);
  CHECK(runs[0].offset == 512);
  CHECK(runs[0].length == 8 * 2560 - 512 - 400);
  CHECK(runs[0].items.front() == 2);  // shard order
}

TEST_CASE("a run holds at most max_samples samples and max_bytes bytes, a larger sample a run alone") {
  std::vector<run_item> items;
  for (uint64_t i = 0; i < 1000; ++i) items.push_back(sample(i));
  run_bounds b;
  b.max_samples = 64;
  b.max_bytes = 1 << 20;
  auto runs = plan_runs(items, b);
  check_cover(items, runs);
  CHECK(runs.size() == (1000 + 63) / 64);
  for (const auto& r : runs) {
    CHECK(r.items.size() <= 64);
    CHECK(r.length <= b.max_bytes);
  }
  b.max_samples = 1000;
  b.max_bytes = 20 * 2560;
  runs = plan_runs(items, b);
  check_cover(items, runs);
  for (const auto& r : runs) CHECK(r.length <= b.max_bytes);
  CHECK(runs.size() == 50);

  const uint64_t large = (8 << 20) + 512;
  std::vector<run_item> big{sample(0), {2560, 2560 + large, 3072, 2560 + large}, sample(0)};
  big[2] = {2560 + large, 5120 + large, 3072 + large, 4720 + large};
  runs = plan_runs(big);
  check_cover(big, runs);
  CHECK(runs.size() == 3);
}

TEST_CASE("gaps between a run's records stay under a sixteenth of its records: other ranks' samples are not read") {
  // Every other sample (two ranks): never merged.
  std::vector<run_item> items;
  for (uint64_t i = 0; i < 100; i += 2) items.push_back(sample(i));
  auto runs = plan_runs(items);
  check_cover(items, runs);
  CHECK(runs.size() == items.size());
  // One sample missing in 32: merged, and the bytes read stay within 1 + 1/16 of the records.
  items.clear();
  for (uint64_t i = 0; i < 256; ++i)
    if (i % 32 != 31) items.push_back(sample(i));
  runs = plan_runs(items);
  check_cover(items, runs);
  CHECK(runs.size() == 1);
  for (const auto& r : runs) CHECK(double(r.length) <= double(records(items, r)) * (1.0 + 1.0 / 16));
}

TEST_CASE("overlapping or repeated records still give every item one run covering its reads") {
  std::vector<run_item> items{sample(3), sample(3), sample(2), sample(9)};
  const auto runs = plan_runs(items);
  check_cover(items, runs);
  CHECK(runs.size() == 2);
}

TEST_CASE("record_of spans the first member's header to the last one's padding") {
  const run_item r = record_of(1024, 1024 + 775 + 512 + 40, 1024, 1024 + 775 + 512 + 40);
  CHECK(r.record_begin == 512);
  CHECK(r.record_end == 2560);
}

namespace {

std::vector<ahead_draw> shards_of(std::initializer_list<std::pair<uint64_t, size_t>> groups, uint64_t bytes = 100) {
  std::vector<ahead_draw> out;
  for (auto [g, n] : groups)
    for (size_t i = 0; i < n; ++i) out.push_back({g, bytes});
  return out;
}

}  // namespace

TEST_CASE("the read-ahead window hints whole shards while they fit, and more once half is read") {
  const read_ahead_window w{1024, 1 << 20};
  CHECK(wants_more(w, {}));
  CHECK(wants_more(w, {512, 1000}));
  CHECK_FALSE(wants_more(w, {513, 1000}));
  CHECK_FALSE(wants_more(w, {10, (1 << 19) + 1}));
  CHECK_FALSE(wants_more({0, 1 << 20}, {}));

  // Five shards of 200 and the start of a sixth: the five whole ones.
  auto up = shards_of({{1, 200}, {2, 200}, {3, 200}, {4, 200}, {5, 200}, {6, 24}});
  CHECK(next_chunk(up, false, w, {}) == 1000);
  CHECK(next_chunk(up, true, w, {}) == 1024);  // the sixth is known complete and fits
  // 512 held: two more shards fit, not three.
  up = shards_of({{6, 200}, {7, 200}, {8, 200}, {9, 1}});
  CHECK(next_chunk(up, false, w, {512, 51200}) == 400);
  // The bytes bound: shards of 200 x 2 KiB fit twice into 1 MiB.
  up = shards_of({{1, 200}, {2, 200}, {3, 200}, {4, 1}}, 2048);
  CHECK(next_chunk(up, false, w, {}) == 400);
}

TEST_CASE("a shard larger than the window is hinted in parts, one that fits an empty window waits for room") {
  const read_ahead_window w{1024, 1 << 20};
  auto up = shards_of({{1, 1025}});  // not complete yet either
  CHECK(next_chunk(up, false, w, {}) == 1024);
  CHECK(next_chunk(up, false, w, {500, 50000}) == 524);
  up = shards_of({{2, 800}, {3, 10}});
  CHECK(next_chunk(up, false, w, {500, 50000}) == 0);  // waits: fits once less is held
  CHECK(next_chunk(up, false, w, {0, 0}) == 800);
  // A sample larger than the bytes window is still hinted alone when nothing is held.
  up = shards_of({{4, 3}}, 2 << 20);
  CHECK(next_chunk(up, true, w, {}) == 1);
  CHECK(next_chunk(up, true, w, {1, 2 << 20}) == 0);
}
