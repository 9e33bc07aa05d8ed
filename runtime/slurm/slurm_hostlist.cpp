// Slurm's compact host and count lists (see slurm_hostlist.hpp).
#include "slurm/slurm_hostlist.hpp"

#include <cctype>

namespace msomni::slurm {

namespace {

[[noreturn]] void fail(const std::string& list, const std::string& why) {
  throw list_error("the Slurm list \"" + list + "\" cannot be read: " + why);
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Splits at commas outside brackets.
std::vector<std::string> split_top(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (const char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) fail(list, "a ']' without its '['");
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) fail(list, "a '[' without its ']'");
  out.push_back(cur);
  return out;
}

// "01-03,7" -> 01 02 03 7, widths kept from each range's first bound.
std::vector<std::string> expand_range_set(const std::string& list, const std::string& set) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= set.size()) {
    const size_t comma = set.find(',', start);
    const auto item = set.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = item.find('-');
    const auto lo = item.substr(0, dash);
    const auto hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi)) fail(list, "\"" + item + "\" is not a number or a range of numbers");
    if (lo.size() > 9 || hi.size() > 9) fail(list, "\"" + item + "\" has too many digits");
    const long a = std::stol(lo), b = std::stol(hi);
    if (b < a) fail(list, "the range \"" + item + "\" counts down");
    if (b - a > 100000) fail(list, "the range \"" + item + "\" names more than 100000 hosts");
    for (long v = a; v <= b; ++v) {
      auto text = std::to_string(v);
      if (text.size() < lo.size()) text.insert(0, lo.size() - text.size(), '0');
      out.push_back(std::move(text));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// One host pattern, brackets possibly several: "r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2.
std::vector<std::string> expand_one(const std::string& list, const std::string& pattern) {
  std::vector<std::string> done{""};
  size_t i = 0;
  while (i < pattern.size()) {
    const size_t open = pattern.find('[', i);
    const auto plain = pattern.substr(i, open == std::string::npos ? std::string::npos : open - i);
    for (auto& d : done) d += plain;
    if (open == std::string::npos) break;
    const size_t close = pattern.find(']', open);
    const auto numbers = expand_range_set(list, pattern.substr(open + 1, close - open - 1));
    std::vector<std::string> next;
    next.reserve(done.size() * numbers.size());
    for (const auto& d : done)
      for (const auto& n : numbers) next.push_back(d + n);
    if (next.size() > 100000) fail(list, "it names more than 100000 hosts");
    done = std::move(next);
    i = close + 1;
  }
  return done;
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty()) return out;
  for (const auto& part : split_top(list)) {
    if (part.empty()) fail(list, "an empty host name");
    for (char c : part)
      if (std::isspace(static_cast<unsigned char>(c))) fail(list, "a host name with a space");
    for (auto& h : expand_one(list, part)) out.push_back(std::move(h));
  }
  return out;
}

std::vector<int64_t> expand_counts(const std::string& list) {
  std::vector<int64_t> out;
  if (list.empty()) return out;
  for (const auto& part : split_top(list)) {
    const size_t paren = part.find('(');
    const auto count = part.substr(0, paren);
    if (!all_digits(count) || count.size() > 9) fail(list, "\"" + part + "\" is not a count");
    int64_t times = 1;
    if (paren != std::string::npos) {
      if (part.size() < paren + 4 || part.compare(paren, 2, "(x") != 0 || part.back() != ')')
        fail(list, "\"" + part + "\" is not COUNT(xTIMES)");
      const auto t = part.substr(paren + 2, part.size() - paren - 3);
      if (!all_digits(t) || t.size() > 6) fail(list, "\"" + part + "\" repeats a count an unreadable number of times");
      times = std::stol(t);
    }
    for (int64_t k = 0; k < times; ++k) out.push_back(std::stol(count));
  }
  return out;
}

int64_t count_index_list(const std::string& list) {
  if (list.empty()) return 0;
  return static_cast<int64_t>(expand_range_set(list, list).size());
}

}  // namespace msomni::slurm
