// Numbers in the JSON msomni writes. JSON has no NaN or infinity, so a non-finite value is
// written as null with a sibling flag: put_number(o, "loss", NaN) gives
// {"loss":null,"loss_nonfinite":true}. Every writer uses put_number for a double that can be
// non-finite, and readers take it back with get_number, so a strict parser accepts every line.
// Write the finished value with json_text (core/json_text.hpp).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace msomni {

// The sibling key that marks `key` as non-finite.
inline std::string nonfinite_key(const std::string& key) { return key + "_nonfinite"; }

// obj[key] = value when it is finite; otherwise obj[key] = null and obj[key_nonfinite] = true.
// For nlohmann::json and nlohmann::ordered_json (which keeps the keys in the order written).
template <class Json>
void put_number(Json& obj, const std::string& key, double value) {
  if (std::isfinite(value)) {
    obj[key] = value;
    return;
  }
  obj[key] = nullptr;
  obj[nonfinite_key(key)] = true;
}

// `value` to `digits` significant digits (the double nearest that decimal, so it prints as
// one: a report's precision, or a float's for values that come from float32); non-finite
// values unchanged.
inline double significant_digits(double value, int digits) {
  if (!std::isfinite(value)) return value;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, value);
  return std::strtod(buf, nullptr);
}

// What put_number wrote under `key`: the number, quiet NaN for a value flagged non-finite
// (which non-finite value it was is not kept), nullopt when the key is absent or holds
// neither a number nor a flagged null.
template <class Json>
std::optional<double> get_number(const Json& obj, const std::string& key) {
  if (!obj.is_object()) return std::nullopt;
  const auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_number()) return it->template get<double>();
  if (it->is_null()) {
    const auto flag = obj.find(nonfinite_key(key));
    if (flag != obj.end() && flag->is_boolean() && flag->template get<bool>())
      return std::numeric_limits<double>::quiet_NaN();
  }
  return std::nullopt;
}

}  // namespace msomni
