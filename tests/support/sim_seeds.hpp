// What the seeded simulation tests read from the environment: MSOMNI_SIM_SEEDS, how many
// seeds to run (a longer soak by hand; CI runs the default), and MSOMNI_SIM_TRACE, the one
// seed whose run to print event by event (unset: the trace test is skipped).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>

namespace msomni::testing {

inline uint64_t sim_seed_count(uint64_t by_default = 5000) {
  if (const char* s = std::getenv("MSOMNI_SIM_SEEDS"); s && *s) return std::strtoull(s, nullptr, 10);
  return by_default;
}

inline std::optional<uint64_t> sim_trace_seed() {
  if (const char* s = std::getenv("MSOMNI_SIM_TRACE"); s && *s) return std::strtoull(s, nullptr, 10);
  return std::nullopt;
}

}  // namespace msomni::testing
