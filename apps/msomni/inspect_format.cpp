// The inspect views' helpers (see inspect_format.hpp).
#include "inspect_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>

namespace msomni::cli::inspect {

const json& family(const json& job, const std::string& name) {
  static const json none = json::array();
  if (!job.is_object()) return none;
  const auto m = job.find("metrics");
  if (m == job.end() || !m->is_object()) return none;
  const auto f = m->find(name);
  return f != m->end() && f->is_array() ? *f : none;
}

std::string label_of(const json& series, const std::string& name) {
  if (name.empty() || !series.is_object()) return {};
  const auto l = series.find("labels");
  if (l == series.end() || !l->is_object()) return {};
  const auto v = l->find(name);
  return v != l->end() && v->is_string() ? v->get<std::string>() : std::string();
}

std::string process_of(const json& series) {
  auto rank = label_of(series, "rank");
  return rank.empty() ? label_of(series, "node") : rank;
}

std::string json_text_of(const json& o, const std::string& key) {
  if (!o.is_object() || !o.contains(key)) return "?";
  const auto& v = o[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string fixed(double v, int decimals) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string plain_number(double v) {
  if (std::isfinite(v) && v == std::round(v) && std::fabs(v) < 1e15) return fixed(v, 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

cell number_cell(std::optional<double> v, int decimals) {
  if (!v) return {"-", std::nullopt};
  return {fixed(*v, decimals), std::isnan(*v) ? std::nullopt : v};
}

cell bytes_cell(std::optional<double> bytes) {
  if (!bytes || !std::isfinite(*bytes)) return {"-", std::nullopt};
  static const char* const units[] = {"B", "K", "M", "G", "T"};
  double v = *bytes;
  size_t u = 0;
  while (std::fabs(v) >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  return {(u == 0 ? fixed(v, 0) : fixed(v, 1)) + units[u], bytes};
}

cell si_bytes_cell(std::optional<double> bytes) {
  if (!bytes || !std::isfinite(*bytes)) return {"-", std::nullopt};
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = *bytes;
  size_t u = 0;
  while (std::fabs(v) >= 1000 && u + 1 < std::size(units)) {
    v /= 1000;
    ++u;
  }
  return {(u == 0 ? fixed(v, 0) : fixed(v, std::fabs(v) < 10 ? 2 : 1)) + units[u], bytes};
}

std::string clock_text(std::optional<double> time_ms) {
  if (!time_ms) return "-";
  const auto t = static_cast<std::time_t>(*time_ms / 1000);
  std::tm tm{};
  if (!::localtime_r(&t, &tm)) return "-";
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

cell fill_bar(std::optional<double> fill, std::optional<double> capacity, size_t width) {
  if (!fill || !capacity || !std::isfinite(*fill) || !std::isfinite(*capacity) || *capacity <= 0) return {"-", std::nullopt};
  const double ratio = std::clamp(*fill / *capacity, 0.0, 1.0);
  const auto full = static_cast<size_t>(std::lround(ratio * static_cast<double>(width)));
  return {"[" + std::string(full, '#') + std::string(width - full, ' ') + "] " + fixed(ratio * 100, 0) + "%", ratio};
}

}  // namespace msomni::cli::inspect
