// metrics_endpoint (see metrics_endpoint.hpp).
#include "metrics/metrics_endpoint.hpp"

#include <httplib.h>
#include <prometheus/text_serializer.h>

#include <sys/socket.h>

#include <chrono>
#include <stdexcept>

namespace msomni::metrics {

namespace {

constexpr const char* exposition_type = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

metrics_endpoint::metrics_endpoint(const std::string& host, uint16_t port, collect_fn collect)
    : host_(host), server_(std::make_unique<httplib::Server>()) {
  auto& s = *server_;
  // One worker: scrapes are rare, and each is answered in full before the next.
  s.new_task_queue = [] { return new httplib::ThreadPool(1); };
  s.set_read_timeout(10, 0);
  s.set_write_timeout(10, 0);
  s.set_payload_max_length(4096);  // a scrape has no body
  s.Get("/metrics", [collect = std::move(collect)](const httplib::Request&, httplib::Response& res) {
    try {
      res.set_content(prometheus::TextSerializer().Serialize(collect()), exposition_type);
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(std::string("cannot collect the metrics: ") + e.what() + "\n", "text/plain");
    }
  });
  const auto refuse_method = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET");
    res.set_content("method not allowed: GET /metrics\n", "text/plain");
  };
  s.Post("/metrics", refuse_method);
  s.Put("/metrics", refuse_method);
  s.Patch("/metrics", refuse_method);
  s.Delete("/metrics", refuse_method);
  s.Options("/metrics", refuse_method);
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: only /metrics is served here\n", "text/plain");
  });
  // SO_REUSEADDR only: cpp-httplib's default also sets SO_REUSEPORT, which would let a second
  // server share a port another one listens on instead of failing to bind.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const auto bind = host + ":" + std::to_string(port);
  const int bound = port == 0 ? s.bind_to_any_port(host) : (s.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) throw std::runtime_error("the metrics endpoint cannot listen on " + bind);
  port_ = static_cast<uint16_t>(bound);
  serving_ = std::thread([this] {
    server_->listen_after_bind();
    served_ = true;
  });
}

metrics_endpoint::~metrics_endpoint() {
  // stop() ends only a server that is already running: repeat it until the serving thread
  // has left, so a destructor that comes before the server started cannot wait forever.
  while (!served_) {
    server_->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  serving_.join();
}

std::string metrics_endpoint::address() const { return host_ + ":" + std::to_string(port_); }

}  // namespace msomni::metrics
