// Byte encoding of pipeline_position (see pipeline_state.hpp).
#include "pipeline_state.hpp"

#include <stdexcept>
#include <string>

namespace msomni::data {
namespace {

constexpr uint32_t magic = 0x4d534450;  // "MSDP"
constexpr uint32_t version = 1;

struct writer {
  std::vector<uint8_t> out;
  void u64(uint64_t v) { for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i))); }
  void str(const std::string& s) { u64(s.size()); out.insert(out.end(), s.begin(), s.end()); }
};

struct reader {
  std::span<const uint8_t> in;
  size_t pos = 0;
  uint64_t u64(const char* what) {
    if (in.size() - pos < 8) throw std::invalid_argument(std::string("data pipeline state: truncated at ") + what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(in[pos + i]) << (8 * i);
    pos += 8;
    return v;
  }
  std::string str(const char* what) {
    const uint64_t n = u64(what);
    if (n > in.size() - pos) throw std::invalid_argument(std::string("data pipeline state: bad length of ") + what);
    std::string s(reinterpret_cast<const char*>(in.data() + pos), n);
    pos += n;
    return s;
  }
};

}  // namespace

std::vector<uint8_t> encode_position(const pipeline_position& p) {
  writer w;
  w.u64(magic);
  w.u64(version);
  w.u64(p.batches);
  w.u64(p.cursors.size());
  for (const auto& c : p.cursors) {
    w.str(c.source);
    w.u64(c.epoch);
    w.u64(c.shard);
    w.u64(c.offset);
    w.u64(c.samples_read);
  }
  for (uint64_t s : p.mixer.rng) w.u64(s);
  w.u64(p.mixer.current.size());
  for (int64_t c : p.mixer.current) w.u64(uint64_t(c));
  return std::move(w.out);
}

pipeline_position decode_position(std::span<const uint8_t> bytes) {
  reader r{bytes};
  if (r.u64("magic") != magic) throw std::invalid_argument("data pipeline state: not a data pipeline record");
  if (const auto v = r.u64("version"); v != version)
    throw std::invalid_argument("data pipeline state: version " + std::to_string(v) + ", expected " + std::to_string(version));
  pipeline_position p;
  p.batches = r.u64("batches");
  const uint64_t n = r.u64("source count");
  if (n > 4096) throw std::invalid_argument("data pipeline state: implausible source count");
  for (uint64_t i = 0; i < n; ++i) {
    msg::source_cursor c;
    c.source = r.str("source name");
    c.epoch = r.u64("epoch");
    c.shard = r.u64("shard");
    c.offset = r.u64("offset");
    c.samples_read = r.u64("samples_read");
    p.cursors.push_back(std::move(c));
  }
  for (auto& s : p.mixer.rng) s = r.u64("mixer rng");
  const uint64_t m = r.u64("mixer size");
  if (m != n) throw std::invalid_argument("data pipeline state: mixer and cursors disagree on the source count");
  for (uint64_t i = 0; i < m; ++i) p.mixer.current.push_back(int64_t(r.u64("mixer accumulator")));
  if (r.pos != bytes.size()) throw std::invalid_argument("data pipeline state: trailing bytes");
  return p;
}

}  // namespace msomni::data
