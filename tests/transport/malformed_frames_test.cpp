// A corpus of malformed frames through the full decode path: zero crashes, none accepted.
// Includes hand-made cases, every checked-in file in frame_corpus/, and seeded mutations of
// a valid frame (the seed is printed, so a failure replays).
#include "core/rng.hpp"
#include "frame/frame.hpp"
#include "frame_fuzz_entry.hpp"
#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

using namespace msomni::transport;

namespace {

std::vector<uint8_t> frame_bytes(const frame_header& h, const std::vector<std::byte>& payload) {
  auto head = encode_header(h);
  // Sized once and copied with memcpy: GCC 12 warns (-Warray-bounds, a false positive) on
  // a vector insert of an empty payload behind the header.
  std::vector<uint8_t> out(head.size() + payload.size());
  std::memcpy(out.data(), head.data(), head.size());
  if (!payload.empty()) std::memcpy(out.data() + head.size(), payload.data(), payload.size());
  return out;
}

std::vector<uint8_t> valid_frame() {
  caf::actor_system_config cfg;
  msomni::register_catalog(cfg);
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto m = caf::make_message(msomni::msg::heartbeat{"node-a", 1, 2, 3, 4});
  REQUIRE_FALSE(sink(m));
  auto env = encode_envelope("sink", std::as_bytes(std::span<const char>(buf)));
  return frame_bytes({frame_kind::actor_message, 0, 1, 0, 0, env.size()}, env);
}

}  // namespace

TEST_CASE("a valid frame is accepted by the fuzz entry (so rejections below mean something)") {
  auto f = valid_frame();
  CHECK(msomni_fuzz_frame(f.data(), f.size()) == 1);
}

TEST_CASE("hand-made malformed frames are rejected without crashing") {
  auto good = valid_frame();
  std::vector<std::vector<uint8_t>> corpus;
  corpus.push_back({});
  corpus.push_back(std::vector<uint8_t>(good.begin(), good.begin() + 39));  // short header
  for (size_t cut : {size_t{41}, size_t{43}, good.size() - 1}) {            // truncated payloads
    auto t = std::vector<uint8_t>(good.begin(), good.begin() + cut);
    corpus.push_back(t);
  }
  auto lie = good;  // payload size says more than is there
  lie[32] = 0xff;
  corpus.push_back(lie);
  auto name_overrun = good;  // envelope name length past the end
  name_overrun[40] = 0xff;
  name_overrun[41] = 0x7f;
  corpus.push_back(name_overrun);
  auto garbage_msg = good;  // CAF payload scrambled
  for (size_t i = 48; i < garbage_msg.size(); ++i) garbage_msg[i] ^= 0x5a;
  corpus.push_back(garbage_msg);
  auto huge_len = good;  // a CAF length prefix claiming gigabytes
  for (size_t i = 46; i < std::min<size_t>(54, huge_len.size()); ++i) huge_len[i] = 0xff;
  corpus.push_back(huge_len);
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(MSOMNI_SOURCE_DIR) / "tests/transport/frame_corpus")) {
    std::ifstream in(entry.path(), std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  int accepted = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const int a = msomni_fuzz_frame(corpus[i].data(), corpus[i].size());
    if (a) MESSAGE("malformed frame #" << i << " was accepted");
    accepted += a;
  }
  CHECK(accepted == 0);
  MESSAGE(corpus.size() << " malformed frames rejected");
}

TEST_CASE("10k seeded mutations of a valid frame never crash the decoder") {
  const auto good = valid_frame();
  auto rng = msomni::rng_stream::derive(20261130, "frame-mutations");
  int accepted = 0;
  for (int i = 0; i < 10000; ++i) {
    auto f = good;
    const int flips = 1 + static_cast<int>(rng.below(8));
    for (int k = 0; k < flips; ++k) f[rng.below(f.size())] = static_cast<uint8_t>(rng.next());
    if (rng.below(4) == 0) f.resize(rng.below(f.size() + 1));
    accepted += msomni_fuzz_frame(f.data(), f.size());
  }
  MESSAGE("seed 20261130: " << accepted << " of 10000 mutants still decoded (those are well-formed)");
  CHECK(accepted < 10000);
}

TEST_CASE("the libFuzzer corpus (tools/fuzz/run_frame_fuzzer.sh) replays without crashing") {
  int files = 0, accepted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(MSOMNI_SOURCE_DIR) / "tests/transport/fuzz_corpus")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> f{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    accepted += msomni_fuzz_frame(f.data(), f.size());
    ++files;
  }
  CHECK(files >= 20);
  MESSAGE(files << " fuzzer inputs replayed, " << accepted << " decode as well-formed frames");
}
