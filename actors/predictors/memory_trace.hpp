// Reads memory traces (docs/memory_traces.md): one JSON object per line per step, parsed
// strictly (every key present, no unknown key, whole non-negative numbers where bytes and
// counts go, steps increasing except at a resume). Works on text; the caller reads the file.
#pragma once

#include "memory_sample.hpp"

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::predict {

// what() is "SOURCE:LINE: why".
class memory_trace_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One line; `where` ("FILE:LINE") prefixes any error.
memory_sample parse_memory_trace_line(std::string_view line, const std::string& where);
// A whole trace; `source` names it in errors. A final newline is optional; an empty line
// elsewhere is an error.
std::vector<memory_sample> parse_memory_trace(std::string_view text, const std::string& source);

// The line a sample is written as (the same format, keys in the documented order).
std::string memory_trace_line(const memory_sample& s);

}  // namespace msomni::predict
