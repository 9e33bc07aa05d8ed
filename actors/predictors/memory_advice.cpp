// Forecast -> reserve / evict advice.
#include "memory_advice.hpp"

#include <algorithm>
#include <stdexcept>

namespace msomni::predict {

memory_advice advise_memory(const memory_forecast& f, int64_t rank, double margin_bytes, double device_bytes,
                            double guest_bytes) {
  if (!(device_bytes > 0)) throw std::invalid_argument("advise_memory: device_bytes must be positive");
  if (!(margin_bytes >= 0) || !(guest_bytes >= 0))
    throw std::invalid_argument("advise_memory: margin_bytes and guest_bytes must be >= 0");
  memory_advice a;
  a.rank = rank;
  const double need = std::max(0.0, f.max_bytes) + margin_bytes;
  a.fits = need <= device_bytes;
  a.reserve_bytes = std::min(need, device_bytes);
  a.lendable_bytes = device_bytes - a.reserve_bytes;
  if (guest_bytes > a.lendable_bytes) {
    a.action = memory_action::evict;
    a.evict_bytes = guest_bytes - a.lendable_bytes;
  }
  return a;
}

std::string to_string(memory_action a) { return a == memory_action::reserve ? "reserve" : "evict"; }

}  // namespace msomni::predict
