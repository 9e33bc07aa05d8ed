// Helpers shared by the inspect views: reading series out of the reply's "metrics" object
// and turning numbers into cells (fixed decimals, bytes, fill bars). Internal to inspect_*.
#pragma once

#include "inspect_model.hpp"

#include "core/json_number.hpp"

#include <map>
#include <optional>
#include <string>

namespace msomni::cli::inspect {

using msomni::get_number;

// The series of one family in the reply ({"labels":{..},"value":V} or "count"/"sum"); an
// empty array when the family is absent.
const json& family(const json& job, const std::string& name);

// A label of a series, "" when it has none.
std::string label_of(const json& series, const std::string& name);

// Which process a series comes from: its rank, else its node ("control" for the control
// process's own series, the node's name for an agent's).
std::string process_of(const json& series);

// The series' value (a flagged non-finite one is NaN), nullopt when it has none.
inline std::optional<double> value_of(const json& series) { return get_number(series, "value"); }

// A number field of an object (e.g. a status rank's "pid"), nullopt when absent.
inline std::optional<double> json_number(const json& o, const std::string& key) { return get_number(o, key); }

// A field's JSON text ("4", "\"running\"" without quotes for strings), "?" when absent.
std::string json_text_of(const json& o, const std::string& key);

template <class Map>
std::optional<double> find_value(const Map& m, const typename Map::key_type& k) {
  const auto it = m.find(k);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

// `v` with `decimals` decimals ("nan" and "inf" for non-finite values).
std::string fixed(double v, int decimals);
// An integer-valued count without decimals, anything else with up to 3.
std::string plain_number(double v);

inline cell text_cell(std::string s) { return {std::move(s), std::nullopt}; }
// "-" when there is no value; such rows sort last.
cell number_cell(std::optional<double> v, int decimals);
// 512B, 12.0K, 340.5M, 1.2G (powers of 1024).
cell bytes_cell(std::optional<double> bytes);
// 512B, 12.0kB, 4.19MB, 340.5MB, 1.20GB (powers of 1000: the [memory] settings' GB).
cell si_bytes_cell(std::optional<double> bytes);
// HH:MM:SS of a Unix time in ms, in the local time zone; "-" without one.
std::string clock_text(std::optional<double> time_ms);
// "[#####     ] 50%" for `fill` of `capacity` with a bar `width` wide; sorts by the ratio.
cell fill_bar(std::optional<double> fill, std::optional<double> capacity, size_t width);

}  // namespace msomni::cli::inspect
