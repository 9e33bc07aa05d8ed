// control_keys (see control_keys.hpp).
#include "control_keys.hpp"

#include <cstdio>

namespace msomni::control {

namespace {

using json = nlohmann::ordered_json;

json parse_object(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

template <class T>
T field(const json& j, const char* name, T fallback) {
  const auto it = j.find(name);
  if (it == j.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

}  // namespace

std::string job_keys::event(uint64_t seq) const {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%012llu", static_cast<unsigned long long>(seq));
  return events() + digits;
}

json leader_record::to_json() const {
  return {{"id", id},           {"host", host},       {"pid", pid},     {"run_dir", run_dir}, {"address", address},
          {"metrics_address", metrics_address}, {"since_ms", since_ms}, {"ttl_s", ttl_s}};
}

leader_record leader_record::from_json(const std::string& text) {
  const auto j = parse_object(text);
  leader_record r;
  r.id = field<std::string>(j, "id", "");
  r.host = field<std::string>(j, "host", "");
  r.pid = field<int64_t>(j, "pid", 0);
  r.run_dir = field<std::string>(j, "run_dir", "");
  r.address = field<std::string>(j, "address", "");
  r.metrics_address = field<std::string>(j, "metrics_address", "");
  r.since_ms = field<int64_t>(j, "since_ms", 0);
  r.ttl_s = field<int64_t>(j, "ttl_s", 0);
  return r;
}

json job_state::to_json() const {
  return {{"phase", phase}, {"term", term},   {"leader", leader},   {"fingerprint", fingerprint},
          {"next_event", next_event}, {"epoch", epoch}, {"step", step}, {"attempt", attempt}, {"updated_ms", updated_ms}, {"recoveries", recoveries}, {"replicas", replicas}};
}

job_state job_state::from_json(const std::string& text) {
  const auto j = parse_object(text);
  job_state s;
  s.phase = field<std::string>(j, "phase", "");
  s.term = field<int64_t>(j, "term", 0);
  s.leader = field<std::string>(j, "leader", "");
  s.fingerprint = field<std::string>(j, "fingerprint", "");
  s.next_event = field<uint64_t>(j, "next_event", 1);
  s.epoch = field<uint64_t>(j, "epoch", 0);
  s.step = field<uint64_t>(j, "step", 0);
  s.attempt = field<uint64_t>(j, "attempt", 0);
  s.updated_ms = field<int64_t>(j, "updated_ms", 0);
  s.recoveries = field<uint64_t>(j, "recoveries", 0);
  s.replicas = field<int64_t>(j, "replicas", 0);
  return s;
}

}  // namespace msomni::control
