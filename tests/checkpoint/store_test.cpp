// The checkpoint store on real files: bit-exact save/load, fallback past corrupt or torn
// checkpoints (and saying so), incremental checkpoints and their merge, retention,
// re-saving a step, and resharding to a different number of replicas.
#include "checkpoint_error.hpp"
#include "crash_support.hpp"
#include "reshard.hpp"

#include <fstream>

using namespace msomni::ckpt;
using namespace msomni::ckpt::testing;
namespace fs = std::filesystem;

namespace {

std::vector<rank_state> states(uint64_t step, uint32_t world, size_t floats = 1024) {
  std::vector<rank_state> v;
  for (uint32_t r = 0; r < world; ++r) v.push_back(make_state(crash_seed, step, r, floats));
  return v;
}

void flip_bit(const fs::path& p, uint64_t offset, int bit) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.read(&c, 1);
  c = static_cast<char>(c ^ (1 << bit));
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("full save and verified load are bit-exact - latest points at the newest") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path(), {3, {3, 2}, nullptr});
  const auto want = states(10, 3, 51200);
  const manifest m = store.save_full(make_meta(10, 3), want);
  CHECK(m.shards.size() == 3);
  CHECK(store.latest_pointer() == "step-00000010");
  const auto res = store.load_latest();
  REQUIRE(res.checkpoint);
  CHECK(res.skipped.empty());
  CHECK(res.checkpoint->m == m);
  CHECK(res.checkpoint->ranks == want);
  const auto only1 = store.load(10, {1});
  CHECK(only1.ranks[1] == want[1]);
  CHECK(only1.ranks[0].tensors.empty());
  CHECK(count_temporaries(store) == 0);
}

TEST_CASE("a flipped bit anywhere in any shard is detected and loading falls back") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  store.save_full(make_meta(1, 2), states(1, 2));
  const manifest newer = store.save_full(make_meta(2, 2), states(2, 2));
  auto rng = msomni::rng_stream::derive(crash_seed, "ckpt.bitflip");
  for (uint32_t rank = 0; rank < 2; ++rank) {
    const fs::path shard = tmp.path() / "step-00000002" / shard_file_name(rank);
    const uint64_t size = newer.shards[rank].bytes;
    for (int i = 0; i < 40; ++i) {
      const uint64_t off = i == 0 ? 0 : (i == 1 ? size - 1 : rng.below(size));
      const int bit = static_cast<int>(rng.below(8));
      INFO("rank " << rank << " offset " << off << " bit " << bit);
      flip_bit(shard, off, bit);
      CHECK_THROWS_AS(store.load(2), checkpoint_error);
      const auto res = store.load_latest();
      REQUIRE(res.checkpoint);
      CHECK(res.checkpoint->m.meta.step == 1);
      REQUIRE(res.skipped.size() == 1);
      CHECK(res.skipped[0].find("step-00000002") != std::string::npos);
      CHECK(res.skipped[0].find(shard_file_name(rank)) != std::string::npos);
      CHECK(res.skipped[0].find("expected " + hex64(newer.shards[rank].xxh3)) != std::string::npos);
      flip_bit(shard, off, bit);  // restore
      CHECK_NOTHROW(store.load(2));
    }
  }
}

TEST_CASE("torn - missing and foreign pieces make a checkpoint unloadable - with the reason") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  store.save_full(make_meta(1, 2), states(1, 2));
  store.save_full(make_meta(2, 2), states(2, 2));
  const fs::path d2 = tmp.path() / "step-00000002";
  SUBCASE("truncated shard") {
    fs::resize_file(d2 / shard_file_name(1), fs::file_size(d2 / shard_file_name(1)) / 2);
    const auto res = store.load_latest();
    REQUIRE(res.checkpoint);
    CHECK(res.checkpoint->m.meta.step == 1);
    CHECK(res.skipped.at(0).find("size") != std::string::npos);
  }
  SUBCASE("missing shard") {
    fs::remove(d2 / shard_file_name(0));
    const auto res = store.load_latest();
    CHECK(res.checkpoint->m.meta.step == 1);
    CHECK(res.skipped.at(0).find(shard_file_name(0)) != std::string::npos);
  }
  SUBCASE("missing manifest") {
    fs::remove(d2 / "MANIFEST");
    const auto res = store.load_latest();
    CHECK(res.checkpoint->m.meta.step == 1);
    CHECK(res.skipped.at(0).find("MANIFEST") != std::string::npos);
  }
  SUBCASE("shards swapped between ranks") {
    fs::rename(d2 / shard_file_name(0), d2 / "x");
    fs::rename(d2 / shard_file_name(1), d2 / shard_file_name(0));
    fs::rename(d2 / "x", d2 / shard_file_name(1));
    CHECK(store.load_latest().checkpoint->m.meta.step == 1);
  }
  SUBCASE("nothing loadable at all") {
    fs::remove(tmp.path() / "step-00000001" / "MANIFEST");
    fs::remove(d2 / "MANIFEST");
    const auto res = store.load_latest();
    CHECK_FALSE(res.checkpoint.has_value());
    CHECK(res.skipped.size() == 2);
  }
}

TEST_CASE("incremental checkpoints reuse the base's shards - merge makes them full") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path(), {1, {}, nullptr});
  const auto base = states(10, 3);
  store.save_full(make_meta(10, 3), base);
  std::map<uint32_t, rank_state> changed;
  changed[2] = make_state(crash_seed, 11, 2, 1024);  // e.g. a departing rank's state
  const manifest inc = store.save_incremental(make_meta(11, 3), 10, changed);
  CHECK(inc.kind == checkpoint_kind::incremental);
  CHECK(inc.base_step == 10);
  CHECK(inc.shards[0].dir == "step-00000010");
  CHECK(inc.shards[2].dir == "step-00000011");
  // keep = 1, yet the base survives because the kept incremental references it.
  CHECK(fs::exists(tmp.path() / "step-00000010"));
  CHECK_FALSE(fs::exists(tmp.path() / "step-00000011" / shard_file_name(0)));
  auto loaded = store.load(11);
  CHECK(loaded.ranks[0] == base[0]);
  CHECK(loaded.ranks[2] == changed[2]);

  const manifest merged = store.merge(11);
  CHECK(merged.kind == checkpoint_kind::full);
  for (const auto& s : merged.shards) CHECK(s.dir == "step-00000011");
  CHECK(store.load(11).ranks == loaded.ranks);
  store.cleanup();
  CHECK_FALSE(fs::exists(tmp.path() / "step-00000010"));  // no longer needed
  CHECK(store.load(11).ranks == loaded.ranks);
}

TEST_CASE("an incremental checkpoint whose base is corrupt is not loaded") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  store.save_full(make_meta(10, 2), states(10, 2));
  store.save_incremental(make_meta(11, 2), 10, {{1, make_state(crash_seed, 11, 1, 1024)}});
  flip_bit(tmp.path() / "step-00000010" / shard_file_name(0), 100, 3);
  const auto res = store.load_latest();
  CHECK_FALSE(res.checkpoint.has_value());
  CHECK(res.skipped.size() == 2);
  CHECK_THROWS_AS(store.merge(11), checkpoint_error);
}

TEST_CASE("incremental checkpoints refuse a different world size or a missing base") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path());
  store.save_full(make_meta(10, 2), states(10, 2));
  CHECK_THROWS_AS(store.save_incremental(make_meta(11, 3), 10, {}), checkpoint_error);
  CHECK_THROWS_AS(store.save_incremental(make_meta(12, 2), 9, {}), checkpoint_error);
  CHECK_THROWS_AS(store.commit(make_meta(13, 2), {}), checkpoint_error);  // full, no shards
}

TEST_CASE("retention keeps N and re-saving a step replaces it") {
  msomni::testing::temp_dir tmp;
  checkpoint_store store(tmp.path(), {2, {}, nullptr});
  for (uint64_t s = 1; s <= 5; ++s) store.save_full(make_meta(s, 1), states(s, 1));
  CHECK(load_order(store.list()) == std::vector<uint64_t>{5, 4});
  store.save_full(make_meta(5, 1), states(3, 1));  // same step, different content
  CHECK(store.load(5).ranks[0] == states(3, 1)[0]);
  CHECK(count_temporaries(store) == 0);
}

TEST_CASE("resharding: replicated params copied - sharded optimizer state re-split") {
  std::vector<rank_state> old(3);
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<float> whole;
  for (uint32_t r = 0; r < 3; ++r) {
    old[r].put_tensor("param/w", {2, 3}, w);
    const auto ir = shard_range(10, 3, r);
    std::vector<float> part;
    for (uint64_t i = ir.begin; i < ir.end; ++i) part.push_back(static_cast<float>(i) * 0.5f);
    old[r].put_tensor("optim/m", {static_cast<int64_t>(part.size())}, part);
    old[r].put_u64("cursor/pos", 100 + r);
  }
  for (uint32_t nw : {1u, 2u, 4u}) {
    const auto out = reshard(old, nw);
    REQUIRE(out.size() == nw);
    std::vector<float> joined;
    for (uint32_t r = 0; r < nw; ++r) {
      CHECK(out[r].find_tensor("param/w")->values == w);
      CHECK(out[r].find_tensor("param/w")->shape == std::vector<int64_t>{2, 3});
      const auto* m = out[r].find_tensor("optim/m");
      REQUIRE(m);
      CHECK(m->values.size() == shard_range(10, nw, r).end - shard_range(10, nw, r).begin);
      joined.insert(joined.end(), m->values.begin(), m->values.end());
      if (r < 3) CHECK(out[r].get_u64("cursor/pos") == 100 + r);
      else CHECK_FALSE(out[r].get_u64("cursor/pos").has_value());
    }
    for (size_t i = 0; i < 10; ++i) CHECK(joined[i] == static_cast<float>(i) * 0.5f);
  }
  old[1].tensors[0].shape = {3, 2};
  CHECK_THROWS_AS(reshard(old, 2), checkpoint_error);
}
