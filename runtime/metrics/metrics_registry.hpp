// One process's metrics: counters, gauges and histograms of the families in the catalog,
// kept by the code that counts (actors, stages, the training loop) in prometheus-cpp's
// registry. Updates are lock-free atomics; looking a series up takes a lock, so callers look
// it up once and keep the reference (a series lives as long as the registry).
// Refreshers copy state that a driver already keeps (data-stage gauges) into series just
// before each collection, so the hot path does not pay for them.
#pragma once

#include "metrics/metric_catalog.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace msomni::metrics {

using labels = std::map<std::string, std::string>;

class metrics_registry {
 public:
  metrics_registry();
  metrics_registry(const metrics_registry&) = delete;
  metrics_registry& operator=(const metrics_registry&) = delete;

  // The series of `family` with `l`. Throws std::logic_error for a family that is not in the
  // catalog, of another kind, or with labels the catalog does not list for it.
  prometheus::Counter& counter(std::string_view family, const labels& l = {});
  prometheus::Gauge& gauge(std::string_view family, const labels& l = {});
  prometheus::Histogram& histogram(std::string_view family, const labels& l = {});
  // Drops the gauge series of `family` with `l` (a target that is gone, so that its last value
  // is not exported as if it were current); nothing when there is none. Checked like gauge().
  void remove_gauge(std::string_view family, const labels& l);

  // Runs the refreshers, then returns every family with its series.
  std::vector<prometheus::MetricFamily> collect();

  // `refresh` runs before every collection until the returned handle is destroyed.
  class refresher_handle {
   public:
    refresher_handle() = default;
    refresher_handle(metrics_registry* owner, uint64_t id) : owner_(owner), id_(id) {}
    refresher_handle(refresher_handle&& o) noexcept : owner_(o.owner_), id_(o.id_) { o.owner_ = nullptr; }
    refresher_handle& operator=(refresher_handle&& o) noexcept;
    ~refresher_handle();

   private:
    metrics_registry* owner_ = nullptr;
    uint64_t id_ = 0;
  };
  [[nodiscard]] refresher_handle add_refresher(std::function<void()> refresh);

 private:
  const family_spec& checked(std::string_view family, metric_kind kind, const labels& l) const;

  std::shared_ptr<prometheus::Registry> registry_;
  std::mutex mutex_;          // the family maps
  std::mutex refresh_mutex_;  // the refreshers (refreshers may look series up, never add refreshers)
  std::map<std::string, prometheus::Family<prometheus::Counter>*, std::less<>> counters_;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*, std::less<>> gauges_;
  std::map<std::string, prometheus::Family<prometheus::Histogram>*, std::less<>> histograms_;
  std::map<uint64_t, std::function<void()>> refreshers_;
  uint64_t next_refresher_ = 1;
};

}  // namespace msomni::metrics
