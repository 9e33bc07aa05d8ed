// Reading the JSON a job writes, in tests: metrics.jsonl and events.jsonl records, control.json,
// `--json` replies and the ranks' "STEP {json}" log lines, all through nlohmann's strict
// parser, so a record that is not JSON fails the test instead of slipping past a regex.
#pragma once

#include "support/process_runner.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::testing {

using nlohmann::json;

// `text` as one JSON value; throws, quoting the text, when it is not JSON.
inline json parse_json(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(std::string("not JSON (") + e.what() + "): " + text);
  }
}

// Each complete (newline-terminated) non-empty line of `text`, parsed. A last line without
// its newline is a record still being appended and is left out.
inline std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  for (size_t at = 0; at < text.size();) {
    const auto nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    if (nl > at) out.push_back(parse_json(text.substr(at, nl - at)));
    at = nl + 1;
  }
  return out;
}

inline std::vector<json> read_json_lines(const std::filesystem::path& p) { return json_lines(read_text(p)); }

// The records of events.jsonl whose "event" is `event`, in order.
inline std::vector<json> events_named(const std::vector<json>& events, const std::string& event) {
  std::vector<json> out;
  for (const auto& e : events)
    if (e.value("event", "") == event) out.push_back(e);
  return out;
}

// The "reason" of an event record ("" when it has none).
inline std::string reason_of(const json& e) { return e.value("reason", ""); }

// True when an `event` record's reason starts with `reason_prefix` (any reason when empty).
inline bool has_event(const std::vector<json>& events, const std::string& event, const std::string& reason_prefix = "") {
  for (const auto& e : events_named(events, event))
    if (reason_of(e).rfind(reason_prefix, 0) == 0) return true;
  return false;
}

// True when some record's reason contains `text`.
inline bool has_reason_containing(const std::vector<json>& events, const std::string& text) {
  for (const auto& e : events)
    if (reason_of(e).find(text) != std::string::npos) return true;
  return false;
}

// A "STEP {json}" line's record, from a rank's stdout or from its log (where the agent puts
// the time first: "2026-12-02T06:34:11.123Z STEP {json}"); null for any other line.
inline json step_line_record(const std::string& line) {
  const auto at = line.rfind("STEP ", 0) == 0 ? 0 : line.find("Z STEP ") == 23 ? 25 : std::string::npos;
  return at == std::string::npos ? json() : parse_json(line.substr(at + 5));
}

}  // namespace msomni::testing
