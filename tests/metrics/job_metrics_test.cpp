// The control process's job-wide view and its HTTP endpoint; the actor accounting base.
#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/job_metrics_collector.hpp"
#include "metrics/metrics_endpoint.hpp"
#include "metrics/metrics_wire.hpp"
#include "support/http_get.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>
#include <cerrno>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <chrono>
#include <thread>

using namespace msomni;
using namespace msomni::metrics;

namespace {

msg::metrics_report rank_report(const std::string& rank, uint64_t seq, double step) {
  metrics_registry r;
  r.gauge("msomni_rank_step").Set(step);
  return to_report(r.collect(), rank, rank, "node-a", seq);
}

double value_of(const std::vector<prometheus::MetricFamily>& fams, const std::string& name, const labels& want) {
  for (const auto& f : fams)
    if (f.name == name)
      for (const auto& m : f.metric) {
        size_t hit = 0;
        for (const auto& l : m.label)
          if (auto it = want.find(l.name); it != want.end() && it->second == l.value) ++hit;
        if (hit == want.size()) return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
      }
  return -1;
}

}  // namespace

TEST_CASE("the collector holds the newest report per source, labelled with the job, rank and node") {
  auto own = std::make_shared<metrics_registry>();
  own->gauge("msomni_job_world_size").Set(2);
  job_metrics_collector c("demo", own, 2);
  std::string why;
  CHECK(c.accept(rank_report("rank-0", 1, 10), why));
  CHECK(c.accept(rank_report("rank-1", 1, 11), why));
  CHECK(c.accept(rank_report("rank-0", 2, 12), why));
  auto all = c.collect();
  CHECK(value_of(all, "msomni_rank_step", {{"rank", "rank-0"}, {"job", "demo"}, {"node", "node-a"}}) == 12);
  CHECK(value_of(all, "msomni_rank_step", {{"rank", "rank-1"}}) == 11);
  CHECK(value_of(all, "msomni_job_world_size", {{"job", "demo"}, {"node", "control"}}) == 2);
  CHECK(value_of(all, "msomni_metrics_sources", {}) == 2);

  SUBCASE("an older report than the one held is refused") {
    CHECK_FALSE(c.accept(rank_report("rank-0", 1, 99), why));
    CHECK(why.find("older") != std::string::npos);
    CHECK(value_of(c.collect(), "msomni_rank_step", {{"rank", "rank-0"}}) == 12);
  }
  SUBCASE("one source more than the bound is refused, and counted") {
    CHECK_FALSE(c.accept(rank_report("rank-2", 1, 1), why));
    CHECK(why.find("already holding") != std::string::npos);
    CHECK(value_of(c.collect(), "msomni_metrics_reports_total", {{"result", "refused"}}) == 1);
  }
  SUBCASE("a forgotten source's series end") {
    c.forget("rank-1");
    CHECK(value_of(c.collect(), "msomni_rank_step", {{"rank", "rank-1"}}) == -1);
    CHECK(c.accept(rank_report("rank-2", 1, 1), why));
  }
}

TEST_CASE("the endpoint serves /metrics on loopback and nothing else") {
  auto own = std::make_shared<metrics_registry>();
  own->gauge("msomni_job_epoch").Set(3);
  job_metrics_collector c("demo", own, 4);
  metrics_endpoint ep("127.0.0.1", 0, [&c] { return c.collect(); });
  REQUIRE(ep.port() != 0);
  CHECK(ep.address() == "127.0.0.1:" + std::to_string(ep.port()));
  const auto ok = testing::http_request("127.0.0.1", ep.port(), "/metrics");
  CHECK(ok.status == 200);
  CHECK(ok.body.find("# TYPE msomni_job_epoch gauge") != std::string::npos);
  CHECK(ok.body.find("msomni_job_epoch{job=\"demo\",node=\"control\"} 3") != std::string::npos);
  for (const char* path : {"/", "/metric", "/metrics/x", "/metricsx", "/../etc/passwd", "/index.html"}) {
    INFO(path);
    const auto r = testing::http_request("127.0.0.1", ep.port(), path);
    CHECK(r.status == 404);
    CHECK(r.body.find("msomni_") == std::string::npos);
  }
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    INFO(method);
    CHECK(testing::http_request("127.0.0.1", ep.port(), "/metrics", method).status == 405);
  }
}

TEST_CASE("the endpoint serves from a thread with an ordinary stack") {
  // A process whose libraries carry a lot of static TLS (CUDA, BLAS) cannot start threads
  // with small fixed stacks; the endpoint's thread must not be one of those. Collect runs on
  // it: a deep frame there would crash with a small stack.
  metrics_registry r;
  size_t depth_reached = 0;
  metrics_endpoint ep("127.0.0.1", 0, [&] {
    volatile char frame[512 * 1024];
    frame[0] = 1;
    frame[sizeof frame - 1] = 1;
    depth_reached = sizeof frame + frame[0] - 1;
    return r.collect();
  });
  CHECK(testing::http_request("127.0.0.1", ep.port(), "/metrics").status == 200);
  CHECK(depth_reached == 512 * 1024);
}

namespace {

// A TCP connection to the endpoint that sends nothing (or `bytes`) and stays open.
int idle_connection(uint16_t port, const std::string& bytes = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  if (!bytes.empty()) REQUIRE(::send(fd, bytes.data(), bytes.size(), 0) == ssize_t(bytes.size()));
  return fd;
}

// True once the endpoint has closed `fd` (recv sees the end), within `limit`.
bool closed_by_peer(int fd, std::chrono::milliseconds limit) {
  timeval tv{0, 0};
  tv.tv_sec = limit.count() / 1000;
  tv.tv_usec = (limit.count() % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  for (;;) {
    const auto n = ::recv(fd, &c, 1, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

double outcome_count(const std::string& body, const std::string& outcome) {
  const std::string key = "msomni_metrics_endpoint_connections_total{outcome=\"" + outcome + "\"} ";
  const auto at = body.find(key);
  return at == std::string::npos ? -1 : std::stod(body.substr(at + key.size()));
}

}  // namespace

TEST_CASE("idle connections cannot keep a scrape out of the endpoint") {
  metrics_registry r;
  r.gauge("msomni_job_epoch").Set(7);
  endpoint_limits limits;
  limits.max_connections = 16;
  limits.header_timeout = std::chrono::milliseconds(1500);
  metrics_endpoint ep("127.0.0.1", 0, [&r] { return r.collect(); }, limits);
  std::vector<int> idle;
  SUBCASE("fewer than the bound: each is answered beside them, and closed at its header timeout") {
    for (int i = 0; i < 10; ++i) idle.push_back(idle_connection(ep.port(), i % 2 ? "GET /metr" : ""));
    const auto scrape = testing::http_request("127.0.0.1", ep.port(), "/metrics");
    CHECK(scrape.status == 200);
    CHECK(scrape.body.find("msomni_job_epoch 7") != std::string::npos);
    for (const int fd : idle) CHECK(closed_by_peer(fd, std::chrono::milliseconds(3000)));
    const auto after = testing::http_request("127.0.0.1", ep.port(), "/metrics");
    CHECK(outcome_count(after.body, "timed_out") == 10);
    CHECK(outcome_count(after.body, "served") >= 1);
  }
  SUBCASE("more than the bound: the oldest silent ones make room, and the scrape is served") {
    for (int i = 0; i < 50; ++i) idle.push_back(idle_connection(ep.port()));
    const auto scrape = testing::http_request("127.0.0.1", ep.port(), "/metrics");
    CHECK(scrape.status == 200);
    CHECK(outcome_count(scrape.body, "evicted") >= 34);
    CHECK(closed_by_peer(idle.front(), std::chrono::milliseconds(3000)));
  }
  SUBCASE("a request head over the bound is refused with 431, HEAD has no body, a bad line is 400") {
    const int fd = idle_connection(ep.port(), "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a'));
    std::string got(64, '\0');
    const auto n = ::recv(fd, got.data(), got.size(), 0);
    REQUIRE(n > 0);
    CHECK(got.rfind("HTTP/1.1 431", 0) == 0);
    idle.push_back(fd);
    const auto head = testing::http_request("127.0.0.1", ep.port(), "/metrics", "HEAD");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    CHECK(testing::http_request("127.0.0.1", ep.port(), "no-slash").status == 404);
    const int bad = idle_connection(ep.port(), "hello\r\n\r\n");
    std::string line(16, '\0');
    REQUIRE(::recv(bad, line.data(), line.size(), 0) > 0);
    CHECK(line.rfind("HTTP/1.1 400", 0) == 0);
    idle.push_back(bad);
  }
  for (const int fd : idle) ::close(fd);
}

TEST_CASE("an endpoint that cannot listen says where") {
  metrics_registry r;
  metrics_endpoint first("127.0.0.1", 0, [&r] { return r.collect(); });
  try {
    metrics_endpoint second("127.0.0.1", first.port(), [&r] { return r.collect(); });
    FAIL("a second endpoint listened on a taken port");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())) != std::string::npos);
  }
}

namespace {

caf::behavior counted(accounted_actor* self, std::shared_ptr<metrics_registry> r) {
  self->account_as("counted", r);
  return {
      [](const msg::heartbeat& h) { return h.seq; },
      [](const msg::rank_left&) {},
  };
}

}  // namespace

TEST_CASE("an accounted actor counts and times what it handles, by message type") {
  caf::actor_system_config cfg;
  register_catalog(cfg);
  caf::actor_system sys{cfg};
  auto r = std::make_shared<metrics_registry>();
  auto a = sys.spawn(counted, r);
  caf::scoped_actor me{sys};
  for (uint64_t i = 0; i < 3; ++i) me->request(a, caf::infinite, msg::heartbeat{"n", 0, 0, i, 0}).receive([](uint64_t) {}, [](caf::error&) {});
  me->send(a, msg::rank_left{});
  me->request(a, caf::infinite, msg::heartbeat{}).receive([](uint64_t) {}, [](caf::error&) {});
  const auto all = r->collect();
  CHECK(value_of(all, "msomni_actor_messages_total", {{"actor", "counted"}, {"message", "heartbeat"}}) == 4);
  CHECK(value_of(all, "msomni_actor_messages_total", {{"actor", "counted"}, {"message", "rank_left"}}) == 1);
  CHECK(value_of(all, "msomni_actor_message_seconds_total", {{"actor", "counted"}, {"message", "heartbeat"}}) >= 0);
  // The handling time of the last message is recorded just after its reply went out.
  const auto observed = [&] {
    uint64_t n = 0;
    for (const auto& f : r->collect())
      if (f.name == "msomni_actor_handling_seconds")
        for (const auto& m : f.metric) n += m.histogram.sample_count;
    return n;
  };
  for (int i = 0; i < 10000 && observed() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(observed() == 5);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE("without a registry an accounted actor keeps no series") {
  caf::actor_system_config cfg;
  register_catalog(cfg);
  caf::actor_system sys{cfg};
  auto a = sys.spawn(counted, std::shared_ptr<metrics_registry>{});
  caf::scoped_actor me{sys};
  me->request(a, caf::infinite, msg::heartbeat{}).receive([](uint64_t v) { CHECK(v == 0); }, [](caf::error&) { FAIL("no reply"); });
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}
