// Brace expansion and file-name globbing of shard patterns (see shard_pattern.hpp).
#include "core/shard_pattern.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <stdexcept>

namespace msomni::shard_pattern {
namespace {

namespace fs = std::filesystem;

bool has_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// The position of the '}' closing the '{' at `open`, or npos.
size_t closing_brace(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// The top-level comma-separated parts of a brace's content.
std::vector<std::string_view> alternatives(std::string_view body) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '{') ++depth;
    if (body[i] == '}') --depth;
    if (body[i] == ',' && depth == 0) {
      parts.push_back(body.substr(from, i - from));
      from = i + 1;
    }
  }
  parts.push_back(body.substr(from));
  return parts;
}

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "A..B" with A, B whole numbers: every number from A to B (either direction), zero padded to
// the wider end when an end is written with a leading zero.
std::vector<std::string> range(std::string_view body, std::string_view pattern) {
  const size_t dots = body.find("..");
  const auto lo = body.substr(0, dots), hi = body.substr(dots + 2);
  if (!digits(lo) || !digits(hi))
    throw std::invalid_argument("brace {" + std::string(body) + "} in \"" + std::string(pattern) +
                                "\": a range needs whole numbers, as in {000..009}");
  uint64_t a = 0, b = 0;
  if (std::from_chars(lo.data(), lo.data() + lo.size(), a).ec != std::errc{} ||
      std::from_chars(hi.data(), hi.data() + hi.size(), b).ec != std::errc{})
    throw std::invalid_argument("brace {" + std::string(body) + "} in \"" + std::string(pattern) + "\": number too large");
  const bool padded = (lo.size() > 1 && lo[0] == '0') || (hi.size() > 1 && hi[0] == '0');
  const size_t width = padded ? std::max(lo.size(), hi.size()) : 0;
  if ((a > b ? a - b : b - a) >= expansions_max)
    throw std::invalid_argument("brace {" + std::string(body) + "} in \"" + std::string(pattern) + "\" names more than " +
                                std::to_string(expansions_max) + " shards");
  std::vector<std::string> out;
  for (uint64_t v = a;; v = a <= b ? v + 1 : v - 1) {
    std::string n = std::to_string(v);
    if (n.size() < width) n.insert(0, width - n.size(), '0');
    out.push_back(std::move(n));
    if (v == b) break;
  }
  return out;
}

void expand_into(std::string_view s, std::string_view pattern, std::vector<std::string>& out) {
  const size_t open = s.find('{');
  const size_t stray = s.find('}');
  if (stray != std::string_view::npos && (open == std::string_view::npos || stray < open))
    throw std::invalid_argument("unmatched '}' in \"" + std::string(pattern) + "\"");
  if (open == std::string_view::npos) {
    if (out.size() >= expansions_max)
      throw std::invalid_argument("\"" + std::string(pattern) + "\" names more than " + std::to_string(expansions_max) +
                                  " shards");
    out.emplace_back(s);
    return;
  }
  const size_t close = closing_brace(s, open);
  if (close == std::string_view::npos)
    throw std::invalid_argument("unclosed '{' in \"" + std::string(pattern) + "\"");
  const auto head = s.substr(0, open), body = s.substr(open + 1, close - open - 1), tail = s.substr(close + 1);
  std::vector<std::string> choices;
  const auto parts = alternatives(body);
  if (parts.size() > 1) {
    for (auto p : parts) choices.emplace_back(p);
  } else if (body.find("..") != std::string_view::npos && body.find('{') == std::string_view::npos) {
    choices = range(body, pattern);
  } else {
    throw std::invalid_argument("brace {" + std::string(body) + "} in \"" + std::string(pattern) +
                                "\" holds neither a list {a,b} nor a range {0..9}");
  }
  for (const auto& c : choices) expand_into(std::string(head) + c + std::string(tail), pattern, out);
}

}  // namespace

bool is_pattern(std::string_view text) { return text.find_first_of("*?[{") != std::string_view::npos; }

std::vector<std::string> expand_braces(std::string_view pattern) {
  std::vector<std::string> out;
  expand_into(pattern, pattern, out);
  return out;
}

std::vector<std::string> match_files(const std::string& pattern) {
  std::vector<std::string> out;
  for (const auto& name : expand_braces(pattern)) {
    const fs::path p(name);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    const std::string file = p.filename().string();
    if (has_glob(p.parent_path().string()))
      throw std::invalid_argument("\"" + pattern + "\": * ? [ apply to the file name only, not to the directory " + dir);
    std::error_code ec;
    if (!has_glob(file)) {
      if (fs::path(file).extension() == ".tar" && fs::is_regular_file(p, ec)) out.push_back(name);
      continue;
    }
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string entry = it->path().filename().string();
      if (it->path().extension() != ".tar" || !it->is_regular_file(ec)) continue;
      if (::fnmatch(file.c_str(), entry.c_str(), FNM_PERIOD) == 0)
        out.push_back(p.has_parent_path() ? (p.parent_path() / entry).string() : entry);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace msomni::shard_pattern
