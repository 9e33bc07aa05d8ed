// The Prometheus endpoint of a process: GET /metrics in the text exposition format (rendered
// by prometheus-cpp's serializer), bound to one host (loopback unless configured otherwise).
// Nothing else is served: every other path is 404, every method but GET (and HEAD, which HTTP
// defines as GET without the body) 405. One response per connection (Connection: close).
//
// Why not a thread per connection (cpp-httplib, civetweb): there a connection that never sends
// its request holds a worker until its read timeout, so a few idle local sockets keep every
// scrape out. Here one thread polls every connection at once:
//
//   accepted --request head complete--> answered (collect, render) --written--> closed
//   accepted --no complete head within header_timeout--> closed (timed_out)
//   accepted, max_connections open --> the oldest connection still waiting for its head is
//            closed to make room (evicted); when every open one is being answered, the new one
//            is closed at once (refused)
//   answered --not written within write_timeout--> closed (timed_out)
//
// so idle sockets cost a slot each for at most header_timeout and cannot keep a scrape out.
// Outcomes are counted in msomni_metrics_endpoint_connections_total{outcome}, appended to every
// scrape. The serving thread has the default stack, whatever static TLS the process carries.
#pragma once

#include <prometheus/metric_family.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace msomni::metrics {

class metrics_registry;

struct endpoint_limits {
  size_t max_connections = 64;                              // open at once
  std::chrono::milliseconds header_timeout{2000};          // from accept to the end of the request head
  std::chrono::milliseconds write_timeout{10000};          // to write the whole response
  size_t max_head_bytes = 8192;                             // a longer request head is refused (431)
};

class metrics_endpoint {
 public:
  using collect_fn = std::function<std::vector<prometheus::MetricFamily>()>;

  // Listens on host:port (port 0: a free one) and serves `collect` at /metrics. Throws
  // std::runtime_error naming the address when it cannot listen there.
  metrics_endpoint(const std::string& host, uint16_t port, collect_fn collect, endpoint_limits limits = {});
  ~metrics_endpoint();
  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  std::string address() const;  // HOST:PORT it listens on
  uint16_t port() const { return port_; }

 private:
  void serve();

  std::string host_;
  uint16_t port_ = 0;
  collect_fn collect_;
  endpoint_limits limits_;
  std::shared_ptr<metrics_registry> own_;  // the endpoint's own series
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: the destructor's stop
  std::atomic<bool> stop_{false};
  std::thread serving_;
};

}  // namespace msomni::metrics
