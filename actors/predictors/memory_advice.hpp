// Turns a rank's memory forecast into advice: reserve forecast + margin for the rank, and
// when co-located work holds more than the rest of the device, how much of it must go.
// Advice, not numbers to act on blindly: the margin absorbs the forecast's error.
#pragma once

#include "memory_predictor.hpp"

#include <cstdint>
#include <string>

namespace msomni::predict {

enum class memory_action { reserve, evict };

struct memory_advice {
  memory_action action = memory_action::reserve;
  int64_t rank = 0;
  double reserve_bytes = 0;   // forecast max + margin, at most the device
  double lendable_bytes = 0;  // what the device has beyond the reservation
  double evict_bytes = 0;     // evict: what co-located work must free
  bool fits = true;           // false: forecast + margin exceeds the whole device
};

// device_bytes: the rank's device ([memory] device_memory_gb); margin_bytes: [memory]
// safety_margin_gb; guest_bytes: what co-located work holds on the device now.
memory_advice advise_memory(const memory_forecast& f, int64_t rank, double margin_bytes, double device_bytes,
                            double guest_bytes = 0);

std::string to_string(memory_action a);

}  // namespace msomni::predict
