// watermark_core (see watermark_core.hpp).
#include "watermark_core.hpp"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace msomni::predict {

namespace {

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f GB", bytes / 1e9);
  return buf;
}

}  // namespace

watermark_core::watermark_core(watermark_settings s) : s_(std::move(s)) {
  if (!(s_.device_bytes > 0)) throw std::invalid_argument("watermark_core: device_bytes must be positive");
  if (!(s_.margin_bytes >= 0)) throw std::invalid_argument("watermark_core: margin_bytes must be >= 0");
}

bool watermark_core::is_news(const rank_state& r, const memory_advice& a) const {
  if (!r.last_sent) return true;
  if (r.last_sent->fits != a.fits || r.last_sent->action != a.action) return true;
  return std::fabs(a.reserve_bytes - r.last_sent->reserve_bytes) > s_.change_fraction * s_.device_bytes;
}

std::optional<watermark_advice> watermark_core::on_sample(const std::string& rank_name, uint32_t rank, memory_sample s) {
  auto& r = ranks_[rank_name];
  if (!r.core) r.core = std::make_unique<memory_forecast_core>(s_.forecast);
  if (r.last_step >= 0 && s.step <= r.last_step && s.event.empty()) s.event = "resume";
  if (r.last_world != 0 && s.world_size != r.last_world && s.event.empty()) s.event = "resize";
  if (s.step <= r.last_step && s.event != "resume") return std::nullopt;  // a repeat: never trains twice
  r.core->observe(s);
  r.last_step = s.step;
  r.last_world = s.world_size;
  ++counts_.samples;
  const auto forecast = r.core->forecast();
  last_forecast_[rank_name] = forecast;
  request_fits(rank_name, rank, s, forecast, r);
  const auto advice = advise_memory(forecast, rank, s_.margin_bytes, s_.device_bytes);
  if (!advice.fits) ++counts_.overflow_forecasts;
  if (!is_news(r, advice)) return std::nullopt;
  r.last_sent = advice;
  ++counts_.advice_sent;
  return watermark_advice{rank_name, static_cast<uint64_t>(s.step), advice, forecast,
                          advice_reason(advice, forecast, s_.margin_bytes, s_.device_bytes, s_.forecast.horizon_steps)};
}

void watermark_core::request_fits(const std::string& rank_name, uint32_t rank, const memory_sample& s,
                                  const memory_forecast& f, rank_state& r) {
  r.fits_sent.erase(r.fits_sent.begin(), r.fits_sent.upper_bound(s.step));  // those steps ran
  const double budget = s_.device_bytes - s_.margin_bytes;
  const size_t known = std::min(f.peak_bytes.size(), s.upcoming.size());
  for (size_t i = 0; i < known; ++i) {
    const double peak = f.peak_bytes[i];
    if (peak <= budget) continue;
    const int64_t step = s.step + 1 + static_cast<int64_t>(i);
    const auto sent = r.fits_sent.find(step);
    if (sent != r.fits_sent.end() && peak <= sent->second + s_.change_fraction * s_.device_bytes) continue;
    r.fits_sent[step] = peak;
    pending_fits_.push_back({rank_name, rank, s.world_size, step, peak, budget, s.upcoming[i]});
    ++counts_.fit_requests;
  }
}

std::vector<fit_request> watermark_core::take_fits() {
  std::vector<fit_request> out;
  out.swap(pending_fits_);
  return out;
}

void watermark_core::forget(const std::string& rank_name) {
  ranks_.erase(rank_name);
  last_forecast_.erase(rank_name);
}

std::string advice_reason(const memory_advice& a, const memory_forecast& f, double margin_bytes, double device_bytes,
                          size_t horizon) {
  std::string t = "forecast peak " + gb(f.max_bytes) + " over the next " + std::to_string(horizon) + " steps + margin " +
                  gb(margin_bytes) + " = " + gb(f.max_bytes + margin_bytes) + " of " + gb(device_bytes);
  if (!a.fits) return t + ": the coming batches do not fit; reserve all " + gb(a.reserve_bytes);
  if (a.action == memory_action::evict) return t + ": co-located work must free " + gb(a.evict_bytes);
  return t + ": reserve " + gb(a.reserve_bytes) + ", " + gb(a.lendable_bytes) + " lendable";
}

}  // namespace msomni::predict
