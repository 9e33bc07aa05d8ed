// metrics_endpoint (see metrics_endpoint.hpp).
#include "metrics/metrics_endpoint.hpp"

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <cstring>
#include <stdexcept>

namespace msomni::metrics {

namespace {

class function_collectable final : public prometheus::Collectable {
 public:
  explicit function_collectable(metrics_endpoint::collect_fn f) : f_(std::move(f)) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return f_(); }

 private:
  metrics_endpoint::collect_fn f_;
};

// The exposer's server answers every path under /metrics (/metrics/x, /metrics.html) as if it
// were /metrics; this runs first and refuses all but the exact path, and all methods but GET.
int only_metrics(mg_connection* conn) {
  const mg_request_info* req = mg_get_request_info(conn);
  const char* uri = req && req->local_uri ? req->local_uri : "";
  if (std::strcmp(uri, "/metrics") != 0) {
    mg_send_http_error(conn, 404, "%s", "not found: only /metrics is served here\n");
    return 404;
  }
  const char* method = req->request_method ? req->request_method : "";
  if (std::strcmp(method, "GET") != 0) {
    mg_send_http_error(conn, 405, "%s", "method not allowed: GET /metrics\n");
    return 405;
  }
  return 0;  // the exposer's handler answers
}

CivetCallbacks only_metrics_callbacks() {
  CivetCallbacks c;
  c.begin_request = only_metrics;
  return c;
}

}  // namespace

metrics_endpoint::metrics_endpoint(const std::string& host, uint16_t port, collect_fn collect)
    : host_(host), collectable_(std::make_shared<function_collectable>(std::move(collect))) {
  const auto bind = host + ":" + std::to_string(port);
  try {
    // One serving thread: scrapes are rare, and each one is answered in full.
    static const CivetCallbacks callbacks = only_metrics_callbacks();
    exposer_ = std::make_unique<prometheus::Exposer>(bind, 1, &callbacks);
  } catch (const std::exception& e) {
    throw std::runtime_error("the metrics endpoint cannot listen on " + bind + ": " + e.what());
  }
  exposer_->RegisterCollectable(collectable_, "/metrics");
  const auto ports = exposer_->GetListeningPorts();
  if (ports.empty()) throw std::runtime_error("the metrics endpoint on " + bind + " has no listening port");
  port_ = static_cast<uint16_t>(ports.front());
}

metrics_endpoint::~metrics_endpoint() = default;

std::string metrics_endpoint::address() const { return host_ + ":" + std::to_string(port_); }

}  // namespace msomni::metrics
