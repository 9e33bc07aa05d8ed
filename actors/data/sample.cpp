// Bad-data bookkeeping and the raw-stage checks (captions, missing pair members).
#include "sample.hpp"

#include "media_format.hpp"

#include <algorithm>
#include <sstream>

namespace msomni::data {

const char* to_string(bad_reason r) {
  switch (r) {
    case bad_reason::bad_tar_header: return "bad_tar_header";
    case bad_reason::truncated_shard: return "truncated_shard";
    case bad_reason::missing_member: return "missing_member";
    case bad_reason::empty_caption: return "empty_caption";
    case bad_reason::invalid_utf8: return "invalid_utf8";
    case bad_reason::corrupt_image: return "corrupt_image";
    case bad_reason::corrupt_video: return "corrupt_video";
    case bad_reason::unreadable_shard: return "unreadable_shard";
    case bad_reason::too_large: return "too_large";
    case bad_reason::too_many_pixels: return "too_many_pixels";
  }
  return "?";
}

uint64_t bad_data_counts::total() const {
  uint64_t t = 0;
  for (auto c : count) t += c;
  return t;
}

void bad_data_counts::see(const std::string& key, const std::string& reason, const std::string& cause, uint64_t draws) {
  auto it = samples.find(key);
  if (it == samples.end()) {
    if (samples.size() >= samples_max) {
      unlisted_draws += draws;
      return;
    }
    it = samples.emplace(key, seen_sample{reason, cause, 0}).first;
  }
  it->second.draws += draws;
}

void bad_data_counts::add(bad_reason r, const std::string& key, const std::string& cause) {
  ++count[size_t(r)];
  auto& keys = recent_keys[r];
  if (keys.size() >= 8) keys.erase(keys.begin());
  keys.push_back(key);
  see(key, to_string(r), cause, 1);
}

void bad_data_counts::add_mismatched(const std::string& key, const std::string& format) {
  ++mismatched;
  const std::string label(format_label(format));
  see(key, "mismatched_name", "its bytes are " + label + ", not the format its name says; decoded as " + label, 1);
}

void bad_data_counts::merge(const bad_data_counts& other) {
  for (int i = 0; i < bad_reason_count; ++i) count[i] += other.count[i];
  for (const auto& [r, keys] : other.recent_keys)
    for (const auto& k : keys) {
      auto& mine = recent_keys[r];
      if (mine.size() >= 8) mine.erase(mine.begin());
      mine.push_back(k);
    }
  for (const auto& [key, s] : other.samples) see(key, s.reason, s.cause, s.draws);
  unlisted_draws += other.unlisted_draws;
  mismatched += other.mismatched;
}

std::string bad_data_counts::report() const {
  std::ostringstream os;
  os << "bad samples " << total() << ":";
  for (int i = 0; i < bad_reason_count; ++i)
    if (count[i] > 0) {
      os << ' ' << to_string(bad_reason(i)) << '=' << count[i];
      auto it = recent_keys.find(bad_reason(i));
      if (it != recent_keys.end() && !it->second.empty()) os << " (last " << it->second.back() << ')';
    }
  return os.str();
}

bool valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return false;
    if (i + n >= text.size()) return false;  // sequence cut off at the end
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid UTF-8 too.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return false;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += n + 1;
  }
  return true;
}

bool check_raw_sample(raw_sample& s, bool has_media, bool has_caption) {
  auto fail = [&](bad_reason r, std::string cause) {
    s.bad = true;
    s.reason = r;
    s.cause = std::move(cause);
    return false;
  };
  const bool needs_media = s.kind != modality::text;
  if (!has_caption) return fail(bad_reason::missing_member, "no .txt caption member");
  if (needs_media && !has_media)
    return fail(bad_reason::missing_member, std::string("no ") + to_string(s.kind) + " member (or an empty one)");
  const bool blank = std::all_of(s.caption.begin(), s.caption.end(),
                                 [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; });
  if (blank) return fail(bad_reason::empty_caption, "the caption is blank");
  if (!valid_utf8(s.caption)) return fail(bad_reason::invalid_utf8, "the caption is not valid UTF-8");
  return true;
}

}  // namespace msomni::data
