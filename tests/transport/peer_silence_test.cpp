// The liveness rule on a real ucx_node: a peer process on this host that keeps running is
// kept up by its keep-alives well past the silence limit; once it is stopped (SIGSTOP: its
// connection stays open, so only silence can tell) the node reports it down for missed
// keep-alives, after the limit and well before any other mechanism would.
#include "core/process.hpp"
#include "ucx/ucx_node.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

using namespace msomni::transport;
using namespace std::chrono_literals;
namespace proc = msomni::process;

namespace {

constexpr auto interval = 100ms;
// 1.5 s of silence: generous for a loaded machine, far below UCX's own keep-alive (20 s).
constexpr int misses = 15;

ucx_node_options options_of(const std::string& name) {
  ucx_node_options o;
  o.name = name;
  o.keepalive_interval = interval;
  o.keepalive_misses = misses;
  return o;
}

// Reads one line (the child's address) from `fd`, at most `limit` bytes.
std::string read_line(int fd, size_t limit = 256) {
  std::string line;
  char c;
  while (line.size() < limit && ::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

struct down_watch {
  std::mutex mutex;
  std::condition_variable changed;
  bool down = false;
  std::string reason;
  std::chrono::steady_clock::time_point at;
};

}  // namespace

TEST_CASE("a running peer stays up on keep-alives and a stopped one is reported silent") {
  // The child starts its node before this process has any UCX state, and tells us where it
  // listens; it then only keeps its node alive until it is killed.
  int to_parent[2];
  REQUIRE(::pipe(to_parent) == 0);
  auto quiet = proc::fork_running([&]() -> int {
    ::close(to_parent[0]);
    ucx_node node(options_of("quiet"), {});
    const std::string line = node.address() + "\n";
    if (::write(to_parent[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 2;
    for (;;) ::pause();
  });
  ::close(to_parent[1]);
  const std::string address = read_line(to_parent[0]);
  ::close(to_parent[0]);
  REQUIRE_MESSAGE(address.find(':') != std::string::npos, "child address: " << address);

  down_watch watch;
  ucx_node_handlers h;
  h.on_peer = [&](const std::string& peer, bool up, const std::string& reason) {
    if (up || peer != "quiet") return;
    std::lock_guard<std::mutex> lock(watch.mutex);
    watch.down = true;
    watch.reason = reason;
    watch.at = std::chrono::steady_clock::now();
    watch.changed.notify_all();
  };
  ucx_node watcher(options_of("watcher"), h);
  watcher.connect(address);
  REQUIRE(watcher.wait_up("quiet", 20s));

  // Nothing but keep-alives flows; 45 of them span three silence limits.
  const auto heard_enough = std::chrono::steady_clock::now() + 60s;
  while (watcher.counters().frames_received.load() < 45 && std::chrono::steady_clock::now() < heard_enough)
    std::this_thread::sleep_for(10ms);
  CHECK(watcher.counters().frames_received.load() >= 45);
  {
    std::lock_guard<std::mutex> lock(watch.mutex);
    REQUIRE_MESSAGE(!watch.down, "a peer that sent keep-alives was reported down: " << watch.reason);
  }
  CHECK(watcher.is_up("quiet"));

  const auto stopped_at = std::chrono::steady_clock::now();
  REQUIRE(quiet.signal(SIGSTOP));
  std::unique_lock<std::mutex> lock(watch.mutex);
  REQUIRE(watch.changed.wait_for(lock, 30s, [&] { return watch.down; }));
  CHECK(watch.reason == "silent for 1500 ms (missed keep-alives)");
  // Silence counts from the last frame heard, which came before the stop.
  CHECK(watch.at - stopped_at > interval * misses - interval);
  CHECK_FALSE(watcher.is_up("quiet"));
  CHECK(watcher.counters().peers_down.load() == 1);
  lock.unlock();
  quiet.signal(SIGKILL);  // a stopped process ends on SIGKILL too
  CHECK(quiet.wait_for(20s).has_value());
}
