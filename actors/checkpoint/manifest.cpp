// Manifest text format (see manifest.hpp and docs/checkpoint_format.md).
#include "manifest.hpp"

#include "checkpoint_error.hpp"

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

namespace msomni::ckpt {

namespace {

constexpr std::string_view first_line = "msomni-checkpoint 1";

bool parse_u64(std::string_view s, uint64_t& out, int base = 10) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string checkpoint_dir_name(uint64_t step) {
  char b[32];
  std::snprintf(b, sizeof b, "step-%08llu", static_cast<unsigned long long>(step));
  return b;
}

std::string shard_file_name(uint32_t rank) {
  char b[32];
  std::snprintf(b, sizeof b, "shard-%05u.bin", rank);
  return b;
}

std::optional<uint64_t> parse_checkpoint_dir_name(std::string_view name) {
  if (!name.starts_with("step-") || name.size() < 13) return std::nullopt;
  uint64_t step;
  if (!parse_u64(name.substr(5), step)) return std::nullopt;
  if (checkpoint_dir_name(step) != name) return std::nullopt;  // one spelling per step
  return step;
}

std::string render_manifest(const manifest& m) {
  std::ostringstream os;
  os << first_line << "\n"
     << "step " << m.meta.step << "\n"
     << "micro_step " << m.meta.micro_step << "\n"
     << "world_size " << m.meta.world_size << "\n"
     << "config_hash " << hex64(m.meta.config_hash) << "\n"
     << "epoch " << m.meta.epoch << "\n"
     << "kind " << (m.kind == checkpoint_kind::full ? "full" : "incremental") << "\n"
     << "base_step " << m.base_step << "\n";
  for (const auto& [key, value] : m.meta.config) {
    // One line each: a key is one word, a value the rest of its line.
    std::string k = key, v = value;
    for (auto& c : k) c = c == ' ' || c == '\t' || c == '\n' || c == '\r' ? '_' : c;
    for (auto& c : v) c = c == '\n' || c == '\r' ? ' ' : c;
    os << "config " << k << " " << v << "\n";
  }
  for (const auto& s : m.shards)
    os << "shard " << s.rank << " bytes " << s.bytes << " xxh3 " << hex64(s.xxh3) << " raw "
       << s.raw_bytes << " entries " << s.entries << " dir " << s.dir << "\n";
  std::string body = os.str();
  body += "manifest_xxh3 " + hex64(XXH3_64bits(body.data(), body.size())) + "\n";
  return body;
}

manifest parse_manifest(std::string_view text, const std::string& where) {
  const size_t tail = text.rfind("manifest_xxh3 ");
  if (tail == std::string_view::npos || (tail > 0 && text[tail - 1] != '\n'))
    throw checkpoint_error(where + ": no manifest_xxh3 line (torn manifest?)");
  const std::string_view body = text.substr(0, tail);
  std::string_view sum_text = text.substr(tail + 14);
  if (!sum_text.empty() && sum_text.back() == '\n') sum_text.remove_suffix(1);
  uint64_t expected;
  if (!parse_u64(sum_text, expected, 16))
    throw checkpoint_error(where + ": bad manifest_xxh3 value '" + std::string(sum_text) + "'");
  const uint64_t actual = XXH3_64bits(body.data(), body.size());
  if (actual != expected)
    throw checkpoint_error(where + ": manifest checksum mismatch: expected " + hex64(expected) +
                           ", actual " + hex64(actual));
  manifest m;
  bool saw_kind = false;
  size_t line_no = 0, pos = 0;
  while (pos < body.size()) {
    size_t eol = body.find('\n', pos);
    if (eol == std::string_view::npos) eol = body.size();
    const std::string_view line = body.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    auto bad = [&](const std::string& why) {
      return checkpoint_error(where + ":" + std::to_string(line_no) + ": " + why + ": '" +
                              std::string(line) + "'");
    };
    if (line_no == 1) {
      if (line != first_line) throw bad("not a msomni checkpoint manifest (version?)");
      continue;
    }
    const auto w = words(line);
    if (w.empty()) continue;
    uint64_t v = 0;
    if (w[0] == "shard") {
      shard_record s;
      uint64_t rank, entries;
      if (w.size() != 12 || w[2] != "bytes" || w[4] != "xxh3" || w[6] != "raw" ||
          w[8] != "entries" || w[10] != "dir" || !parse_u64(w[1], rank) ||
          !parse_u64(w[3], s.bytes) || !parse_u64(w[5], s.xxh3, 16) ||
          !parse_u64(w[7], s.raw_bytes) || !parse_u64(w[9], entries) ||
          !parse_checkpoint_dir_name(w[11]))
        throw bad("malformed shard line");
      s.rank = static_cast<uint32_t>(rank);
      s.entries = static_cast<uint32_t>(entries);
      s.dir = std::string(w[11]);
      m.shards.push_back(std::move(s));
    } else if (w[0] == "config") {
      if (w.size() < 3) throw bad("expected 'config KEY VALUE'");
      const size_t at = static_cast<size_t>(w[1].data() - line.data()) + w[1].size() + 1;
      m.meta.config[std::string(w[1])] = std::string(line.substr(at));
    } else if (w.size() != 2) {
      throw bad("expected 'key value'");
    } else if (w[0] == "kind") {
      if (w[1] == "full") m.kind = checkpoint_kind::full;
      else if (w[1] == "incremental") m.kind = checkpoint_kind::incremental;
      else throw bad("kind must be full or incremental");
      saw_kind = true;
    } else if (w[0] == "config_hash") {
      if (!parse_u64(w[1], m.meta.config_hash, 16)) throw bad("bad hex value");
    } else if (!parse_u64(w[1], v)) {
      throw bad("bad number");
    } else if (w[0] == "step") m.meta.step = v;
    else if (w[0] == "micro_step") m.meta.micro_step = v;
    else if (w[0] == "world_size") m.meta.world_size = static_cast<uint32_t>(v);
    else if (w[0] == "epoch") m.meta.epoch = v;
    else if (w[0] == "base_step") m.base_step = v;
    else throw bad("unknown key");
  }
  if (!saw_kind) throw checkpoint_error(where + ": manifest has no 'kind' line");
  if (m.shards.size() != m.meta.world_size)
    throw checkpoint_error(where + ": " + std::to_string(m.shards.size()) + " shard lines for world_size " +
                           std::to_string(m.meta.world_size));
  for (size_t r = 0; r < m.shards.size(); ++r)
    if (m.shards[r].rank != r)
      throw checkpoint_error(where + ": shard lines must list ranks 0.." +
                             std::to_string(m.shards.size() - 1) + " in order");
  return m;
}

}  // namespace msomni::ckpt
