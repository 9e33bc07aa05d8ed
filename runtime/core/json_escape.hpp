// JSON string escaping for the hand-written JSON lines msomni prints and stores (journals,
// status replies, safetensors headers): quote, backslash and control characters.
#pragma once

#include <string>

namespace msomni {

// `s` as the inside of a JSON string: " and \ escaped, bytes below 0x20 as \u00XX.
std::string json_escape(const std::string& s);

}  // namespace msomni
