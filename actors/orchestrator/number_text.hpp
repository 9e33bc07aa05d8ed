// A number with a fixed count of decimals, for the text of journal events and summaries.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace msomni::orchestrator {

inline std::string fixed(double v, int decimals) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// A duration in seconds with one decimal ("2.5").
inline std::string seconds_text(std::chrono::nanoseconds d) { return fixed(static_cast<double>(d.count()) / 1e9, 1); }

}  // namespace msomni::orchestrator
