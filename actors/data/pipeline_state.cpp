// Byte encoding of pipeline_position (see pipeline_state.hpp).
#include "pipeline_state.hpp"

#include <stdexcept>
#include <string>

namespace msomni::data {
namespace {

constexpr uint32_t magic = 0x4d534450;  // "MSDP"
constexpr uint32_t version = 2;

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
  if (p.sources.size() != p.at.draws.size() || p.at.mixer.current.size() != p.at.draws.size())
    throw std::invalid_argument("data pipeline state: sources, draws and mixer disagree on the source count");
  writer w;
  w.u64(magic);
  w.u64(version);
  w.u64(p.at.sample);
  w.u64(p.micro);
  w.u64(p.sources.size());
  for (size_t i = 0; i < p.sources.size(); ++i) {
    w.str(p.sources[i]);
    w.u64(p.at.draws[i]);
    w.u64(uint64_t(p.at.mixer.current[i]));
  }
  for (uint64_t s : p.at.mixer.rng) w.u64(s);
  return std::move(w.out);
}

pipeline_position decode_position(std::span<const uint8_t> bytes) {
  reader r{bytes};
  if (r.u64("magic") != magic) throw std::invalid_argument("data pipeline state: not a data pipeline record");
  if (const auto v = r.u64("version"); v != version)
    throw std::invalid_argument("data pipeline state: version " + std::to_string(v) + ", expected " + std::to_string(version) +
                                (v == 1 ? " (a per-rank shard cursor from before the global sample order)" : ""));
  pipeline_position p;
  p.at.sample = r.u64("samples consumed");
  p.micro = r.u64("micro-batches");
  const uint64_t n = r.u64("source count");
  if (n > 4096) throw std::invalid_argument("data pipeline state: implausible source count");
  for (uint64_t i = 0; i < n; ++i) {
    p.sources.push_back(r.str("source name"));
    p.at.draws.push_back(r.u64("draws"));
    p.at.mixer.current.push_back(int64_t(r.u64("mixer accumulator")));
  }
  for (auto& s : p.at.mixer.rng) s = r.u64("mixer rng");
  if (r.pos != bytes.size()) throw std::invalid_argument("data pipeline state: trailing bytes");
  return p;
}

}  // namespace msomni::data
