// The "STEP {json}" line a rank prints to its log per optimizer step (tests and people read
// it): step, loss, world size and step time, in that order; a non-finite loss is written as
// core/json_number.hpp says (null plus "loss_nonfinite": true).
#pragma once

#include "core/json_number.hpp"
#include "core/json_text.hpp"
#include "messages/training_messages.hpp"

#include <string>

namespace msomni::apps {

// The fields every STEP line has; a caller may add more before step_line.
inline nlohmann::ordered_json step_fields(const msg::step_record& r) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  o["step"] = r.step;
  put_number(o, "loss", msg::value_of(r.loss, r.loss_kind));
  o["world_size"] = r.world_size;
  o["step_time_ms"] = static_cast<double>(r.step_time_ns) / 1e6;
  return o;
}

inline std::string step_line(const nlohmann::ordered_json& fields) { return "STEP " + json_text(fields); }

}  // namespace msomni::apps
