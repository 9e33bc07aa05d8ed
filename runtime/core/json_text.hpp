// The text of a JSON value as msomni writes it: compact, one line, and never an exception for
// a string that is not valid UTF-8 (a path or an error message from the system can hold any
// bytes); such bytes become U+FFFD instead of aborting the write.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace msomni {

// For nlohmann::json and nlohmann::ordered_json.
template <class Json>
std::string json_text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace msomni
