// The Prometheus endpoint of a process: GET /metrics in the text exposition format, served
// by prometheus-cpp's exposer, bound to one host (loopback unless configured otherwise).
// Nothing else is served: every other path is 404, every other method 405.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace prometheus {
class Exposer;
class Collectable;
}  // namespace prometheus

namespace msomni::metrics {

class metrics_endpoint {
 public:
  using collect_fn = std::function<std::vector<prometheus::MetricFamily>()>;

  // Listens on host:port (port 0: a free one) and serves `collect` at /metrics. Throws
  // std::runtime_error naming the address when it cannot listen there.
  metrics_endpoint(const std::string& host, uint16_t port, collect_fn collect);
  ~metrics_endpoint();
  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  std::string address() const;  // HOST:PORT it listens on
  uint16_t port() const { return port_; }

 private:
  std::string host_;
  uint16_t port_ = 0;
  std::shared_ptr<prometheus::Collectable> collectable_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace msomni::metrics
