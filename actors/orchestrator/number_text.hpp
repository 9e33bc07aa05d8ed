// A number with a fixed count of decimals, for the text of journal events and summaries.
#pragma once

#include <cstdio>
#include <string>

namespace msomni::orchestrator {

inline std::string fixed(double v, int decimals) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

}  // namespace msomni::orchestrator
