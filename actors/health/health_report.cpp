// Rendering of a health_report (health_report.hpp).
#include "health_report.hpp"

#include <algorithm>
#include <cstdio>

namespace msomni::health {

nlohmann::ordered_json to_json(const health_report& r) {
  nlohmann::ordered_json j;
  j["node"] = r.node;
  j["verdict"] = to_string(verdict(r));
  j["level"] = to_string(r.level);
  j["config"] = r.config;
  j["checks"] = nlohmann::ordered_json::array();
  for (const auto& c : r.checks) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", c.ms);
    j["checks"].push_back(nlohmann::ordered_json{{"id", c.id},
                           {"status", to_string(c.status)},
                           {"value", c.value},
                           {"threshold", c.threshold},
                           {"unit", c.unit},
                           {"reason", c.reason},
                           {"ms", std::stod(ms)}});
  }
  return j;
}

std::string render_table(const health_report& r) {
  size_t id_w = 2, value_w = 5, thr_w = 9;
  auto with_unit = [](const std::string& v, const std::string& u) { return v.empty() || u.empty() ? v : v + " " + u; };
  for (const auto& c : r.checks) {
    id_w = std::max(id_w, c.id.size());
    value_w = std::max(value_w, with_unit(c.value, c.unit).size());
    thr_w = std::max(thr_w, c.threshold.size());
  }
  value_w = std::min<size_t>(value_w, 40);
  thr_w = std::min<size_t>(thr_w, 24);
  auto pad = [](std::string s, size_t w) {
    if (s.size() < w) s.append(w - s.size(), ' ');
    return s;
  };
  std::string out = "pre-flight health check (" + std::string(to_string(r.level)) + ") of " + r.config + " on " +
                    r.node + "\n";
  out += pad("id", id_w) + "  " + pad("status", 7) + "  " + pad("value", value_w) + "  " + pad("threshold", thr_w) +
         "  reason\n";
  size_t counts[4] = {0, 0, 0, 0};
  for (const auto& c : r.checks) {
    ++counts[size_t(c.status)];
    out += pad(c.id, id_w) + "  " + pad(to_string(c.status), 7) + "  " + pad(with_unit(c.value, c.unit), value_w) +
           "  " + pad(c.threshold, thr_w) + "  " + c.reason + "\n";
  }
  out += "verdict: " + std::string(to_string(verdict(r))) + " (" + std::to_string(counts[0]) + " pass, " +
         std::to_string(counts[1]) + " warn, " + std::to_string(counts[2]) + " fail, " + std::to_string(counts[3]) +
         " skipped)\n";
  return out;
}

}  // namespace msomni::health
