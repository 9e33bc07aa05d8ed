// One side of the small-message benchmark (driven by bench_latency.py; ADDR/PEER/GO protocol
// as in the transport tests). The first node by name answers; the other measures:
//   LAT_FRAME  <us>   one-way latency of an 8-byte frame (ping-pong RTT / 2), raw ucx_node
//   RATE_FRAME <m/s>  one-way rate of 8-byte frames, raw ucx_node
//   LAT_ACTOR  <us>   one-way latency of a typed CAF request/response through the gateway
#include "core/command_line.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <sstream>

using namespace msomni;
using namespace msomni::transport;
using namespace std::chrono_literals;

// A node with the defaults and this name (the benchmarks run without a job secret).
static ucx_node_options node_named(const std::string& name, int64_t busy_poll_us) {
  ucx_node_options o;
  o.name = name;
  o.busy_poll = std::chrono::microseconds(busy_poll_us);
  return o;
}

int main(int argc, char** argv) {
  std::string name = "lat0";
  CLI::App app{"One side of the small-message benchmark (bench_latency.py drives it over stdin/stdout).",
               "msomni-bench-latency-node"};
  command_line::set_conventions(app);
  app.add_option("NAME", name, "this node's name; the first by name answers, the other measures")
      ->capture_default_str();
  int64_t busy_poll_us = 0;
  app.add_option("--busy-poll-us", busy_poll_us,
                 "the progress thread's latency mode (ucx_node_options::busy_poll); the control plane runs 50")
      ->capture_default_str();
  std::string idle = "wake";
  app.add_option("--idle", idle,
                 "how idle actor threads wait (configure_process): poll (work stealing), park (a rank's) or wake "
                 "(the control plane's)")
      ->check(CLI::IsMember({"poll", "park", "wake"}))
      ->capture_default_str();
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;
  caf::actor_system_config cfg;
  const auto mode = idle == "poll" ? idle_threads::poll : idle == "park" ? idle_threads::park : idle_threads::wake;
  caf::actor_system sys{configure_process(cfg, 1, mode)};
  // Raw frames and the gateway each need the hub's actor-frame handler, so each gets a node.
  transport_hub hub(node_named(name, busy_poll_us));
  transport_hub actor_hub(node_named(name + "-gw", busy_poll_us));
  gateway gw(sys, actor_hub);
  gw.publish_dynamic("echo", sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](const msg::scale_request& r) { return msg::scale_reply{r.request_id, true, ""}; }};
  }));

  // Raw frames: the answering side echoes pings (c == 1) and counts stream frames (c == 2).
  std::mutex m;
  std::condition_variable cv;
  uint64_t pongs = 0, stream = 0;
  std::string peer_name;
  const uint64_t stream_total = 200000;
  hub.on_actor_frame([&](const std::string& peer, const frame_header& h, std::span<const std::byte>) {
    if (h.c == 1) hub.node().send(peer, {frame_kind::actor_message, 0, 0, 0, 3, 0}, std::vector<std::byte>(8));
    if (h.c == 2 && ++stream == stream_total) hub.node().send(peer, {frame_kind::actor_message, 0, 0, 0, 4, 0}, std::vector<std::byte>(8));
    if (h.c == 3 || h.c == 4) {
      std::lock_guard<std::mutex> lock(m);
      ++pongs;
      cv.notify_all();
    }
  });
  std::cout << "ADDR " << name << " " << hub.node().address() << " " << actor_hub.node().address() << std::endl;
  std::string other, other_addr, other_actor_addr;
  for (std::string line; std::getline(std::cin, line) && line != "GO";) {
    std::istringstream in(line);
    std::string tag, n, a, b;
    in >> tag >> n >> a >> b;
    if (n != name) other = n, other_addr = a, other_actor_addr = b;
  }
  if (other < name) hub.node().connect(other_addr), actor_hub.node().connect(other_actor_addr);
  if (!hub.node().wait_up(other, 20s) || !actor_hub.node().wait_up(other + "-gw", 20s)) return 1;
  const bool measurer = name > other;
  if (measurer) {
    auto wait_pongs = [&](uint64_t want) {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return pongs >= want; });
    };
    const int iters = 20000;
    for (int i = 0; i < 1000; ++i) {  // warm-up
      hub.node().send(other, {frame_kind::actor_message, 0, 0, 0, 1, 0}, std::vector<std::byte>(8));
      wait_pongs(i + 1);
    }
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      hub.node().send(other, {frame_kind::actor_message, 0, 0, 0, 1, 0}, std::vector<std::byte>(8));
      wait_pongs(1000 + i + 1);
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "LAT_FRAME " << s / iters / 2 * 1e6 << std::endl;

    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < stream_total;)
      if (hub.node().send(other, {frame_kind::actor_message, 0, 0, 0, 2, 0}, std::vector<std::byte>(8))) ++i;
    wait_pongs(1000 + iters + 1);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "RATE_FRAME " << stream_total / s << std::endl;

    caf::scoped_actor self{sys};
    auto echo = gw.remote_dynamic(other + "-gw", "echo");
    const int req = 5000;
    for (int i = 0; i < req + 500; ++i) {
      if (i == 500) t0 = std::chrono::steady_clock::now();
      self->request(echo, 10s, msg::scale_request{static_cast<uint64_t>(i), 0, 0, ""}).receive(
          [](const msg::scale_reply&) {}, [](caf::error&) { std::exit(1); });
    }
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "LAT_ACTOR " << s / req / 2 * 1e6 << std::endl;
  }
  std::cout << "DONE" << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
  return 0;
}
