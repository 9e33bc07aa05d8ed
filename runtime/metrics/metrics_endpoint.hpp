// The Prometheus endpoint of a process: GET /metrics in the text exposition format (rendered
// by prometheus-cpp's serializer), served by cpp-httplib on one thread of its own, bound to
// one host (loopback unless configured otherwise). Nothing else is served: every other path
// is 404, every method but GET (and HEAD, which HTTP defines as GET without the body) 405.
// Its threads have the default stack, whatever static TLS the process's libraries carry.
#pragma once

#include <prometheus/metric_family.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

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
  std::unique_ptr<httplib::Server> server_;
  std::atomic<bool> served_{false};  // the serving thread has left listen_after_bind
  std::thread serving_;
};

}  // namespace msomni::metrics
