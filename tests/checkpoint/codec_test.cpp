// Shard and manifest encoding: bit-exact round trips, and every flipped bit is detected.
#include "checkpoint_error.hpp"
#include "manifest.hpp"
#include "shard_codec.hpp"
#include "test_states.hpp"

#include <doctest/doctest.h>
#include <xxhash.h>
#include <zstd.h>

#include <cstring>
#include <map>

using namespace msomni::ckpt;
using msomni::ckpt::testing::make_state;

namespace {

std::vector<uint8_t> encode(const rank_state& s, codec_options o = {}) {
  shard_encoder enc(o);
  memory_sink sink;
  const auto sum = enc.encode(s, 3, 77, sink);
  REQUIRE(sum.bytes == sink.bytes.size());
  REQUIRE(sum.xxh3 == xxh3_of(sink.bytes));
  return sink.bytes;
}

}  // namespace

TEST_CASE("shard round trip is bit-exact for tensors - RNG states and blobs") {
  for (int level : {-5, 1, 3}) {
    const rank_state s = make_state(42, 10, 3, 4096);
    const auto bytes = encode(s, {level, level == 3 ? 2 : 0});
    const rank_state back = decode_shard(bytes, "mem");
    CHECK(back == s);
    // The RNG stream continues exactly where it was saved.
    auto saved = s.get_rng("rng/data");
    auto loaded = back.get_rng("rng/data");
    REQUIRE(saved);
    REQUIRE(loaded);
    for (int i = 0; i < 5; ++i) CHECK(saved->next() == loaded->next());
    CHECK(back.get_u64("counter/step") == 10u);
    const auto layout = read_shard_layout(bytes, "mem");
    CHECK(layout.rank == 3);
    CHECK(layout.step == 77);
    CHECK(layout.entries.size() == s.tensors.size() + s.blobs.size());
  }
}

TEST_CASE("special float values survive (NaN payloads - -0 - denormals)") {
  rank_state s;
  std::vector<float> v = {-0.0f, 1e-45f, std::numeric_limits<float>::infinity()};
  uint32_t nan_bits = 0x7fc00123u;
  float nan;
  std::memcpy(&nan, &nan_bits, 4);
  v.push_back(nan);
  s.put_tensor("param/x", {4}, v);
  s.put_blob("empty", {});
  const auto back = decode_shard(encode(s), "mem");
  REQUIRE(back.tensors.size() == 1);
  CHECK(std::memcmp(back.tensors[0].values.data(), v.data(), v.size() * 4) == 0);
  CHECK(back.blobs[0].bytes.empty());
}

TEST_CASE("every single flipped bit in a shard is detected by decoding alone") {
  const rank_state s = make_state(7, 1, 0, 64);
  const auto good = encode(s);
  size_t detected = 0, total = 0;
  for (size_t byte = 0; byte < good.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[byte] ^= static_cast<uint8_t>(1u << bit);
      ++total;
      try {
        (void)decode_shard(bad, "mem");
      } catch (const checkpoint_error&) {
        ++detected;
      }
    }
  CHECK(total == good.size() * 8);
  CHECK(detected == total);
}

TEST_CASE("errors name the entry and the expected and actual checksum") {
  const auto good = encode(make_state(7, 1, 0, 4096));
  const auto layout = read_shard_layout(good, "mem");
  const auto& e = layout.entries[0];
  auto bad = good;
  bad[e.offset + e.compressed_size / 2] ^= 0x10;
  try {
    (void)decode_shard(bad, "/x/shard-00000.bin");
    FAIL("corruption not detected");
  } catch (const checkpoint_error& err) {
    const std::string w = err.what();
    CHECK(w.find("/x/shard-00000.bin") != std::string::npos);
    CHECK(w.find("'" + e.name + "'") != std::string::npos);
    CHECK(w.find("expected " + hex64(e.frame_xxh3)) != std::string::npos);
    CHECK(w.find("actual") != std::string::npos);
  }
}

TEST_CASE("truncated shards are refused") {
  const auto good = encode(make_state(1, 1, 0, 256));
  for (size_t keep : {size_t{0}, size_t{10}, good.size() / 2, good.size() - 1}) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + keep);
    CHECK_THROWS_AS(decode_shard(cut, "mem"), checkpoint_error);
  }
}

TEST_CASE("encoding refuses duplicate names and shapes that do not match the values") {
  rank_state dup;
  dup.put_blob("a", {1});
  dup.put_blob("a", {2});
  CHECK_THROWS_AS(encode(dup), checkpoint_error);
  rank_state shape;
  shape.put_tensor("t", {2, 3}, std::vector<float>(5));
  CHECK_THROWS_AS(encode(shape), checkpoint_error);
}

TEST_CASE("manifest round trip - and any changed byte is refused") {
  manifest m;
  m.meta = {120, 480, 2, 0xfeedfacecafebeefull, 9};
  m.kind = checkpoint_kind::incremental;
  m.base_step = 100;
  m.shards = {{0, 1000, 0x1111, 4000, 8, "step-00000100"}, {1, 2000, 0x2222, 4000, 8, "step-00000120"}};
  const std::string text = render_manifest(m);
  CHECK(parse_manifest(text, "M") == m);
  for (size_t i = 0; i < text.size(); ++i) {
    std::string bad = text;
    bad[i] ^= 0x01;
    CHECK_THROWS_AS(parse_manifest(bad, "M"), checkpoint_error);
  }
  CHECK_THROWS_AS(parse_manifest(text.substr(0, text.size() / 2), "M"), checkpoint_error);
}

TEST_CASE("a manifest records the job config by key - values with spaces round trip") {
  manifest m;
  m.meta = {100, 0, 1, 0xabcdull, 1};
  m.meta.config = {{"model.d_model", "64"}, {"model.name", "\"fuyu-tiny\""},
                   {"data.sources[0].uri", "\"file:///a b/c\""}, {"training.lr", "0.001"}};
  m.shards = {{0, 1000, 0x1111, 4000, 8, "step-00000100"}};
  const std::string text = render_manifest(m);
  CHECK(text.find("config model.d_model 64\n") != std::string::npos);
  CHECK(text.find("config data.sources[0].uri \"file:///a b/c\"\n") != std::string::npos);
  CHECK(parse_manifest(text, "M") == m);
  // A manifest without config lines (an older writer) still reads, with no config.
  m.meta.config.clear();
  CHECK(render_manifest(m).find("config ") == std::string::npos);
  CHECK(parse_manifest(render_manifest(m), "M").meta.config.empty());
}

TEST_CASE("checkpoint directory names have one spelling per step") {
  CHECK(checkpoint_dir_name(5) == "step-00000005");
  CHECK(parse_checkpoint_dir_name("step-00000005") == 5u);
  CHECK(parse_checkpoint_dir_name("step-5") == std::nullopt);
  CHECK(parse_checkpoint_dir_name("step-000000x5") == std::nullopt);
  CHECK(parse_checkpoint_dir_name("step-123456789") == 123456789u);
}

TEST_CASE("incompressible entries are stored raw and compressible ones as zstd frames, both verified") {
  rank_state s;
  auto r = msomni::rng_stream::derive(5, "ckpt.raw", 0);
  std::vector<float> noise(300'000), zeros(300'000, 0.0f), small_noise(64);
  for (auto& x : noise) x = r.normal() * 0.02f;
  for (auto& x : small_noise) x = r.normal();
  s.put_tensor("param/noise", {300'000}, noise);
  s.put_tensor("param/zeros", {300'000}, zeros);
  s.put_tensor("param/small", {64}, small_noise);
  s.put_blob("empty", {});
  shard_encoder enc({});
  memory_sink sink;
  const auto sum = enc.encode(s, 0, 1, sink);
  const auto layout = read_shard_layout(sink.bytes, "mem");
  std::map<std::string, entry_index> by_name;
  for (const auto& e : layout.entries) by_name[e.name] = e;
  // Noise does not shrink: its frame is its bytes, and probing cost one sample, not a pass.
  CHECK(by_name["param/noise"].codec == frame_codec::raw);
  CHECK(by_name["param/noise"].compressed_size == by_name["param/noise"].raw_size);
  CHECK(by_name["param/noise"].frame_xxh3 == by_name["param/noise"].raw_xxh3);
  CHECK(by_name["param/zeros"].codec == frame_codec::zstd);
  CHECK(by_name["param/zeros"].compressed_size < by_name["param/zeros"].raw_size / 100);
  // A small entry that zstd cannot shrink is kept raw rather than stored larger.
  CHECK(by_name["param/small"].codec == frame_codec::raw);
  CHECK(by_name["empty"].compressed_size == 0);
  CHECK(sum.stored_raw == 3);
  CHECK(decode_shard(sink.bytes, "mem") == s);
  // A flipped bit in a raw frame is caught by its checksum, naming the entry.
  auto bad = sink.bytes;
  bad[by_name["param/noise"].offset + 1000] ^= 0x01;
  CHECK_THROWS_WITH_AS(decode_shard(bad, "mem"), doctest::Contains("'param/noise' frame checksum mismatch"),
                       checkpoint_error);
}

namespace {

template <class T>
void put_le(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.insert(out.end(), b, b + sizeof v);
}

// A version-1 shard as builds before the raw codec wrote it: every frame zstd, no codec byte.
std::vector<uint8_t> version1_shard(const std::string& name, const std::vector<float>& values, uint32_t version = 1) {
  std::vector<uint8_t> file;
  const char magic[8] = {'M', 'S', 'O', 'S', 'H', 'R', 'D', '1'};
  file.insert(file.end(), magic, magic + 8);
  put_le<uint32_t>(file, version);
  put_le<uint32_t>(file, 0);   // rank
  put_le<uint64_t>(file, 9);   // step
  put_le<uint32_t>(file, 1);   // entries
  put_le<uint32_t>(file, 0);   // flags
  const size_t raw_size = values.size() * sizeof(float);
  std::vector<uint8_t> frame(ZSTD_compressBound(raw_size));
  frame.resize(ZSTD_compress(frame.data(), frame.size(), values.data(), raw_size, 1));
  const uint64_t offset = file.size();
  file.insert(file.end(), frame.begin(), frame.end());
  std::vector<uint8_t> index;
  put_le<uint16_t>(index, static_cast<uint16_t>(name.size()));
  index.insert(index.end(), name.begin(), name.end());
  put_le<uint8_t>(index, 0);  // tensor_f32
  put_le<uint8_t>(index, 1);  // ndim
  put_le<int64_t>(index, static_cast<int64_t>(values.size()));
  put_le<uint64_t>(index, offset);
  put_le<uint64_t>(index, frame.size());
  put_le<uint64_t>(index, raw_size);
  put_le<uint64_t>(index, XXH3_64bits(frame.data(), frame.size()));
  put_le<uint64_t>(index, XXH3_64bits(values.data(), raw_size));
  const uint64_t index_offset = file.size();
  file.insert(file.end(), index.begin(), index.end());
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  XXH3_64bits_update(h, file.data(), 32);
  XXH3_64bits_update(h, index.data(), index.size());
  const uint64_t meta = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  put_le<uint64_t>(file, index_offset);
  put_le<uint64_t>(file, index.size());
  put_le<uint64_t>(file, meta);
  const char end[8] = {'M', 'S', 'O', 'S', 'H', 'E', 'N', 'D'};
  file.insert(file.end(), end, end + 8);
  return file;
}

}  // namespace

TEST_CASE("version-1 shards (every frame zstd, no codec byte) still load") {
  std::vector<float> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  const auto old = version1_shard("param/w", v);
  const auto layout = read_shard_layout(old, "v1");
  REQUIRE(layout.entries.size() == 1);
  CHECK(layout.entries[0].codec == frame_codec::zstd);
  CHECK(layout.step == 9);
  const auto back = decode_shard(old, "v1");
  REQUIRE(back.tensors.size() == 1);
  CHECK(back.tensors[0].values == v);
  // And a version from the future is refused, saying which versions this build reads.
  const auto future = version1_shard("param/w", v, 3);
  CHECK_THROWS_WITH_AS(read_shard_layout(future, "v3"), doctest::Contains("this build reads 1 to 2"), checkpoint_error);
}
