// Small text helpers of the remote request code (internal to msomni_data): lower case,
// trimming, and an environment variable with a fallback.
#pragma once

#include <cctype>
#include <cstdlib>
#include <string>

namespace msomni::data::remote_text {

inline std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// The variable's value when set and not empty, else `fallback`.
inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

}  // namespace msomni::data::remote_text
