// Key-by-key comparison of a checkpoint's config with the config resuming from it (see
// resume_compatibility.hpp).
#include "config/resume_compatibility.hpp"

#include <array>
#include <cstdlib>
#include <string_view>

namespace msomni::config {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Numbers compare by value: "3e-4" and "0.0003" are the same learning rate.
bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (a.empty() || b.empty()) return false;
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a);
  const double y = std::strtod(b.c_str(), &end_b);
  return end_a == a.c_str() + a.size() && end_b == b.c_str() + b.size() && x == y;
}

}  // namespace

bool key_fixes_saved_state(const std::string& key) {
  static constexpr std::array<std::string_view, 2> families{"model.", "data."};
  static constexpr std::array<std::string_view, 3> keys{"training.seed", "training.global_batch",
                                                        "training.micro_batch"};
  if (key == "model.plugin") return false;  // where the plugin is loaded from; its name and keys decide
  for (const auto f : families)
    if (starts_with(key, f)) return true;
  for (const auto k : keys)
    if (key == k) return true;
  return false;
}

resume_comparison compare_for_resume(const std::map<std::string, std::string>& saved,
                                     const std::map<std::string, std::string>& now) {
  resume_comparison out;
  out.saved_config_known = !saved.empty();
  if (!out.saved_config_known) return out;
  auto note = [&out](const std::string& key, const std::string& was, const std::string& is) {
    (key_fixes_saved_state(key) ? out.refused : out.accepted).push_back({key, was, is});
  };
  // Both maps are sorted: one merge walk visits every key once, in order.
  auto s = saved.begin();
  auto n = now.begin();
  while (s != saved.end() || n != now.end()) {
    if (n == now.end() || (s != saved.end() && s->first < n->first)) {
      note(s->first, s->second, "");
      ++s;
    } else if (s == saved.end() || n->first < s->first) {
      note(n->first, "", n->second);
      ++n;
    } else {
      if (!same_value(s->second, n->second)) note(s->first, s->second, n->second);
      ++s;
      ++n;
    }
  }
  return out;
}

std::string describe(const config_change& c) {
  return c.key + " " + (c.saved.empty() ? "(none)" : c.saved) + " -> " + (c.now.empty() ? "(none)" : c.now);
}

}  // namespace msomni::config
