// memory_report_tracker (see job_memory.hpp).
#include "job_memory.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace msomni::job_runner {

namespace {

// A finite, non-negative number under `key` in GB, as bytes; nullopt otherwise.
std::optional<uint64_t> gb_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double gb = it->get<double>();
  if (!std::isfinite(gb) || gb < 0 || gb > 1e9) return std::nullopt;  // 1e9 GB: beyond any device
  return static_cast<uint64_t>(std::llround(gb * 1e9));
}

}  // namespace

bool memory_report_tracker::take_line(const std::string& line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  if (auto a = j.find("attempt"); a != j.end() && a->is_number_unsigned()) {
    const uint64_t attempt = a->get<uint64_t>();
    if (attempt > attempt_) {  // a new attempt's predictor starts afresh
      attempt_ = attempt;
      per_rank_.clear();
    }
  }
  auto kind = j.find("kind");
  if (kind == j.end() || *kind != "memory_advice") return false;
  auto rank = j.find("rank");
  if (rank == j.end() || !rank->is_string()) return false;
  const auto forecast = gb_field(j, "forecast_gb"), margin = gb_field(j, "margin_gb"), gb = gb_field(j, "gb");
  std::optional<uint64_t> peak;
  if (forecast && margin) peak = *forecast + *margin;
  else if (!j.contains("forecast_gb") && gb && j.value("action", "") == "reserve")
    peak = gb;  // an older line, without the forecast: its reservation (capped at the device)
  if (!peak || *peak == 0) return false;
  per_rank_[rank->get<std::string>()] = *peak;
  if (const auto device = gb_field(j, "device_gb")) device_ = *device;
  if (auto s = j.find("step"); s != j.end() && s->is_number_unsigned()) step_ = std::max(step_, s->get<uint64_t>());
  return true;
}

uint64_t memory_report_tracker::forecast_peak_bytes() const {
  uint64_t peak = 0;
  for (const auto& [rank, bytes] : per_rank_) peak = std::max(peak, bytes);
  return peak;
}

std::optional<msg::job_memory_report> memory_report_tracker::due() {
  const uint64_t peak = forecast_peak_bytes();
  if (peak == 0) return std::nullopt;
  if (sent_ && sent_->forecast_peak_bytes == peak && sent_->device_bytes == device_) return std::nullopt;
  sent_ = msg::job_memory_report{job_, peak, device_, step_};
  ++reports_;
  return sent_;
}

}  // namespace msomni::job_runner
