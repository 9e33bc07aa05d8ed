// Strict JSONL reading and writing of memory traces with nlohmann-json.
#include "memory_trace.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

namespace msomni::predict {

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& why) {
  throw memory_trace_error(where + ": " + why);
}

void expect_keys(const json& j, const std::string& what, std::initializer_list<const char*> keys,
                 const std::string& where) {
  if (!j.is_object()) fail(where, what + " is not an object");
  for (const char* k : keys)
    if (!j.contains(k)) fail(where, what + " has no \"" + k + "\"");
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* name : keys) known = known || k == name;
    if (!known) fail(where, what + " has an unknown key \"" + k + "\"");
  }
}

int64_t count(const json& j, const std::string& key, const std::string& where) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) fail(where, "\"" + key + "\" must be a whole number, not " + v.dump());
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(where, "\"" + key + "\" is too large: " + v.dump());
  const auto x = v.get<int64_t>();
  if (x < 0) fail(where, "\"" + key + "\" must not be negative: " + v.dump());
  return x;
}

batch_features read_batch(const json& j, const std::string& what, const std::string& where) {
  expect_keys(j, what,
              {"samples", "image_patches", "video_patches", "text_tokens", "seq_len", "micro_batch"}, where);
  const json& s = j.at("samples");
  expect_keys(s, what + ".samples", {"image", "video", "text"}, where);
  batch_features b;
  b.image_samples = count(s, "image", where);
  b.video_samples = count(s, "video", where);
  b.text_samples = count(s, "text", where);
  b.image_patches = count(j, "image_patches", where);
  b.video_patches = count(j, "video_patches", where);
  b.text_tokens = count(j, "text_tokens", where);
  b.seq_len = count(j, "seq_len", where);
  b.micro_batch = count(j, "micro_batch", where);
  return b;
}

nlohmann::ordered_json batch_json(const batch_features& b) {
  return nlohmann::ordered_json{{"samples", {{"image", b.image_samples}, {"video", b.video_samples}, {"text", b.text_samples}}},
              {"image_patches", b.image_patches},
              {"video_patches", b.video_patches},
              {"text_tokens", b.text_tokens},
              {"seq_len", b.seq_len},
              {"micro_batch", b.micro_batch}};
}

}  // namespace

memory_sample parse_memory_trace_line(std::string_view line, const std::string& where) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    fail(where, std::string("not JSON: ") + e.what());
  }
  expect_keys(j, "the sample",
              {"step", "t_ms", "in_use_bytes", "peak_bytes", "batch", "upcoming", "world_size", "event"}, where);
  memory_sample s;
  s.step = count(j, "step", where);
  const json& t = j.at("t_ms");
  if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 0)
    fail(where, "\"t_ms\" must be a finite number >= 0, not " + t.dump());
  s.t_ms = t.get<double>();
  s.in_use_bytes = count(j, "in_use_bytes", where);
  s.peak_bytes = count(j, "peak_bytes", where);
  if (s.peak_bytes < s.in_use_bytes)
    fail(where, "\"peak_bytes\" " + std::to_string(s.peak_bytes) + " is below \"in_use_bytes\" " +
                    std::to_string(s.in_use_bytes) + " (the peak includes the step's end)");
  s.batch = read_batch(j.at("batch"), "\"batch\"", where);
  const json& up = j.at("upcoming");
  if (!up.is_array()) fail(where, "\"upcoming\" must be an array");
  for (size_t k = 0; k < up.size(); ++k)
    s.upcoming.push_back(read_batch(up[k], "\"upcoming\"[" + std::to_string(k) + "]", where));
  s.world_size = count(j, "world_size", where);
  if (s.world_size < 1) fail(where, "\"world_size\" must be at least 1");
  const json& ev = j.at("event");
  if (!ev.is_string()) fail(where, "\"event\" must be a string");
  s.event = ev.get<std::string>();
  if (s.event != "" && s.event != "resize" && s.event != "resume")
    fail(where, "\"event\" must be \"\", \"resize\" or \"resume\", not \"" + s.event + "\"");
  return s;
}

std::vector<memory_sample> parse_memory_trace(std::string_view text, const std::string& source) {
  std::vector<memory_sample> out;
  size_t line_no = 0, at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = source + ":" + std::to_string(line_no);
    if (line.find_first_not_of(" \t") == std::string_view::npos) fail(where, "empty line");
    auto s = parse_memory_trace_line(line, where);
    // A resumed run repeats the steps since its checkpoint, so only a resume may go back.
    if (!out.empty() && s.step <= out.back().step && s.event != "resume")
      fail(where, "step " + std::to_string(s.step) + " does not follow step " + std::to_string(out.back().step) +
                      " (only a \"resume\" line may go back)");
    out.push_back(std::move(s));
  }
  return out;
}

std::string memory_trace_line(const memory_sample& s) {
  // ordered_json keeps the documented key order.
  nlohmann::ordered_json up = nlohmann::ordered_json::array();
  for (const auto& b : s.upcoming) up.push_back(batch_json(b));
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["t_ms"] = s.t_ms;
  j["in_use_bytes"] = s.in_use_bytes;
  j["peak_bytes"] = s.peak_bytes;
  j["batch"] = batch_json(s.batch);
  j["upcoming"] = up;
  j["world_size"] = s.world_size;
  j["event"] = s.event;
  return j.dump();
}

}  // namespace msomni::predict
