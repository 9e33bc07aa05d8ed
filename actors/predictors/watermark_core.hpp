// The job's memory watermark: one forecast core per rank (memory_forecast_core), fed with the
// rank's step samples, and the decision of when a forecast becomes advice worth sending. Pure:
// samples in, advice out; no clock, thread or file.
//
// Advice is sent when it says something new about a rank: its first forecast, a reservation
// that moved by more than `change_fraction` of the device since the last advice, or a change
// between fitting and not fitting (forecast + margin beyond the device). A sample whose step
// does not follow the rank's last one is a restart from a checkpoint ("resume"); a changed
// world size is a "resize": both are passed on to the predictor, which knows what they mean.
#pragma once

#include "memory_advice.hpp"
#include "memory_forecast_core.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msomni::predict {

struct watermark_settings {
  memory_forecast_settings forecast;
  double margin_bytes = 3.5e9;   // [memory] safety_margin_gb
  double device_bytes = 80e9;    // [memory] device_memory_gb
  double change_fraction = 0.05;
};

struct watermark_advice {
  std::string rank_name;
  uint64_t step = 0;
  memory_advice advice;
  memory_forecast forecast;
  std::string reason;
};

// A step the forecast says will not fit: its peak plus the margin passes the device. Only for
// steps whose batch the rank's pipeline already holds (the sample's upcoming batches), which
// the rank can still change (rank_worker/batch_fit.hpp).
struct fit_request {
  std::string rank_name;
  uint32_t rank = 0;
  int64_t world_size = 0;
  int64_t step = 0;
  double forecast_bytes = 0;
  double budget_bytes = 0;  // device less the margin
  batch_features batch;
};

struct watermark_counts {
  uint64_t samples = 0;
  uint64_t advice_sent = 0;
  uint64_t overflow_forecasts = 0;  // steps whose forecast + margin exceeded the device
  uint64_t fit_requests = 0;
};

class watermark_core {
 public:
  explicit watermark_core(watermark_settings s);

  // A step sample of `rank_name` (predict::memory_sample's fields); advice when it is news.
  std::optional<watermark_advice> on_sample(const std::string& rank_name, uint32_t rank, memory_sample s);
  // The fit requests of the samples since the last call, in order. A step is asked again only
  // when a newer forecast for it is higher by more than `change_fraction` of the device.
  std::vector<fit_request> take_fits();
  // The rank left the job: its window goes with it.
  void forget(const std::string& rank_name);

  // The newest forecast of each rank (for the inspector and /metrics).
  const std::map<std::string, memory_forecast>& forecasts() const noexcept { return last_forecast_; }
  const watermark_counts& counts() const noexcept { return counts_; }
  const watermark_settings& settings() const noexcept { return s_; }

 private:
  struct rank_state {
    std::unique_ptr<memory_forecast_core> core;
    int64_t last_step = -1;
    int64_t last_world = 0;
    std::optional<memory_advice> last_sent;
    std::map<int64_t, double> fits_sent;  // step -> forecast asked for; steps past only
  };
  void request_fits(const std::string& rank_name, uint32_t rank, const memory_sample& s, const memory_forecast& f,
                    rank_state& r);
  bool is_news(const rank_state& r, const memory_advice& a) const;

  watermark_settings s_;
  std::map<std::string, rank_state> ranks_;
  std::map<std::string, memory_forecast> last_forecast_;
  std::vector<fit_request> pending_fits_;
  watermark_counts counts_;
};

// "forecast peak 1.20 GB over the next 10 steps + margin 0.50 GB = 1.70 GB of 2.00 GB: reserve 1.70 GB"
std::string advice_reason(const memory_advice& a, const memory_forecast& f, double margin_bytes, double device_bytes,
                          size_t horizon);

}  // namespace msomni::predict
