// Transport integration: 2 and 4 real processes over UCX on loopback.
#include "support/wired_processes.hpp"

#include <doctest/doctest.h>

#include <thread>

#include <chrono>
#include <memory>

using namespace std::chrono_literals;
using msomni::child_process;

namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct group {
  std::vector<std::unique_ptr<child_process>> nodes;

  // shared_memory: UCX's same-host transports (else TCP); same_host: collectives read each
  // other's memory (else UCX frames).
  group(int n, const std::string& scenario, bool shared_memory = true, bool same_host = true) {
    std::vector<std::vector<std::string>> args;
    for (int i = 0; i < n; ++i)
      args.push_back({"--name", "node" + std::to_string(i), "--scenario", scenario, "--shared-memory",
                      shared_memory ? "1" : "0", "--same-host", same_host ? "1" : "0"});
    nodes = msomni::testing::start_wired(MSOMNI_TEST_NODE, args);
    for (auto& node : nodes) REQUIRE_MESSAGE(node->read_until("READY", 20s), node->log);
  }

  // The RESULT lines of the first `count` nodes; each must be ok.
  std::vector<std::string> expect_results(std::chrono::seconds timeout, size_t count) {
    std::vector<std::string> lines;
    for (size_t i = 0; i < count; ++i) {
      auto r = nodes[i]->read_until("RESULT ", timeout);
      CAPTURE(nodes[i]->log);
      REQUIRE(r);
      CHECK(r->rfind("RESULT ok", 0) == 0);
      MESSAGE("node" << i << ": " << *r);
      lines.push_back(*r);
    }
    return lines;
  }

  void finish(size_t count) {
    for (auto& n : nodes) n->close_stdin();
    for (size_t i = 0; i < count; ++i) CHECK(nodes[i]->wait(20s) == 0);
  }
};

}  // namespace

TEST_CASE("typed request/response across 2 and 4 processes") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    group g(n, "request");
    g.expect_results(60s, n);
    g.finish(n);
  }
}

TEST_CASE("per-pair ordering under load: 100k messages from each of 3 senders") {
  group g(4, "ordering");
  g.expect_results(120s, 4);
  g.finish(4);
}

TEST_CASE("a 64 MiB bulk transfer arrives byte for byte") {
  group g(2, "bulk");
  g.expect_results(60s, 2);
  g.finish(2);
}

TEST_CASE("all-reduce equals the reference sum from 1 element to 64 MiB, 2 and 4 ranks, both paths") {
  for (bool same_host : {true, false})
    for (int n : {2, 4}) {
      CAPTURE(same_host);
      CAPTURE(n);
      group g(n, "allreduce", true, same_host);
      for (const auto& line : g.expect_results(240s, n))
        CHECK(line.find(same_host ? " same-host" : " ucx-ring") != std::string::npos);
      g.finish(n);
    }
}

TEST_CASE("the same-host path sums to the same bits as the UCX ring, on every member, 2 to 4 ranks") {
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    group g(n, "same_bits");
    const auto lines = g.expect_results(240s, n);
    for (const auto& line : lines) CHECK(line.find("DIGEST ") != std::string::npos);
    for (const auto& line : lines) CHECK(line.substr(line.find("DIGEST ")) == lines.front().substr(lines.front().find("DIGEST ")));
    g.finish(n);
  }
}

// Detection latency is reported, not asserted: the two clocks are different processes', and
// a loaded machine stretches any bound. The waits below are generous bounds on the effect.
TEST_CASE("kill -9 delivers down to every monitor and the survivors all-reduce again") {
  group g(4, "kill");
  for (auto& n : g.nodes) REQUIRE(n->read_until("ARMED", 20s));
  const auto killed_at = wall_ms();
  g.nodes.back()->kill9();
  for (int i = 0; i < 3; ++i) {
    auto down = g.nodes[i]->read_until("DOWN ", 10s);
    CAPTURE(g.nodes[i]->log);
    REQUIRE(down);
    const auto at = std::stoll(down->substr(5));
    MESSAGE("node" << i << " saw down after " << at - killed_at << " ms");
  }
  g.expect_results(240s, 3);
  g.finish(3);
}

TEST_CASE("a request to a process killed before it answered fails at once, not at its timeout") {
  group g(2, "request_down");
  std::this_thread::sleep_for(500ms);  // the request is out
  const auto killed_at = wall_ms();
  g.nodes.back()->kill9();
  auto failed = g.nodes[0]->read_until("FAILED ", 20s);  // the request's own timeout is 60 s
  CAPTURE(g.nodes[0]->log);
  REQUIRE(failed);
  MESSAGE("the request failed " << std::stoll(failed->substr(7)) - killed_at << " ms after the kill");
  CHECK(failed->find("request_receiver_down") != std::string::npos);
  g.expect_results(20s, 1);
  g.finish(1);
}

TEST_CASE("kill -9 during an all-reduce fails the collective and the survivors rebuild") {
  // The same-host path; UCX frames over UCX shared memory (no UCX error mode) and over TCP
  // (peer mode).
  struct path {
    bool shared_memory, same_host;
  };
  for (path p : {path{true, true}, path{true, false}, path{false, false}}) {
    CAPTURE(p.shared_memory);
    CAPTURE(p.same_host);
    group g(4, "kill_busy", p.shared_memory, p.same_host);
    for (auto& n : g.nodes) REQUIRE(n->read_until("ARMED", 60s));
    const auto killed_at = wall_ms();
    g.nodes.back()->kill9();
    for (int i = 0; i < 3; ++i) {
      auto failed = g.nodes[i]->read_until("FAILED ", 10s);
      CAPTURE(g.nodes[i]->log);
      REQUIRE(failed);
      const auto at = std::stoll(failed->substr(7));
      MESSAGE("node" << i << " failed its all-reduce after " << at - killed_at << " ms");
    }
    g.expect_results(240s, 3);
    g.finish(3);
  }
}
