// The control process's view of the whole job's metrics: its own registry plus the newest
// report each rank and agent pushed, every series labelled with the job (and the sender's
// rank and node). /metrics and `msomni inspect` read it. At most `max_sources` senders are
// held; a report from one more is refused, and refused reports are counted by reason.
// Thread-safe: reports arrive on an actor thread, scrapes on the HTTP server's.
#pragma once

#include "messages/metrics_messages.hpp"
#include "metrics/metrics_registry.hpp"

#include <prometheus/metric_family.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace msomni::metrics {

class job_metrics_collector {
 public:
  job_metrics_collector(std::string job, std::shared_ptr<metrics_registry> own, size_t max_sources);

  // Keeps `r` as its source's newest report: true, or false with `why` (the previous stays).
  bool accept(const msg::metrics_report& r, std::string& why);

  // Drops what `source` pushed (a rank that left or died: its series end with it).
  void forget(const std::string& source);

  // Every family of the job, series of all processes merged, sorted by name.
  std::vector<prometheus::MetricFamily> collect();

  std::vector<std::string> sources() const;
  std::shared_ptr<metrics_registry> own() const { return own_; }

 private:
  struct held {
    uint64_t seq = 0;
    std::vector<prometheus::MetricFamily> families;
  };
  const std::string job_;
  const std::shared_ptr<metrics_registry> own_;
  const size_t max_sources_;
  mutable std::mutex mutex_;
  std::map<std::string, held> pushed_;
  prometheus::Counter& accepted_;
  prometheus::Gauge& source_count_;
};

}  // namespace msomni::metrics
