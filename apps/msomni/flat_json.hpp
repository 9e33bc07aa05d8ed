// Field readers for the one-line, flat JSON objects msomni writes itself (control.json,
// metrics.jsonl lines, status replies). Not a JSON parser: the first "key": wins.
#pragma once

#include <optional>
#include <string>

namespace msomni::cli {

// The string value of "key", or nullopt.
std::optional<std::string> json_string(const std::string& text, const std::string& key);

// The number after "key":, or a negative number when there is none.
double json_number(const std::string& text, const std::string& key);

}  // namespace msomni::cli
