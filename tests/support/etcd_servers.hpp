// Real etcd servers for tests: a cluster of `members` etcd processes on loopback, each with
// its own free client and peer port and its data directory in one temporary directory, the
// lot stopped (SIGTERM, then SIGKILL) and removed when it goes. A member can be stopped,
// paused (SIGSTOP) and continued, to cut the cluster or a client off.
#pragma once

#include "support/free_port.hpp"
#include "support/http_get.hpp"
#include "support/process_runner.hpp"

#include "core/process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace msomni::testing {

inline const char* const etcd_binary = "/usr/bin/etcd";

inline bool healthy(uint16_t client_port) {
  try {
    return http_request("127.0.0.1", client_port, "/health").body.find("\"health\":\"true\"") != std::string::npos;
  } catch (const std::exception&) {
    return false;
  }
}

class etcd_servers {
 public:
  explicit etcd_servers(int members = 1) {
    std::string cluster;
    for (int m = 0; m < members; ++m) {
      member x;
      x.name = "m" + std::to_string(m);
      x.client_port = free_loopback_port();
      x.peer_port = free_loopback_port();
      cluster += (cluster.empty() ? "" : ",") + x.name + "=http://127.0.0.1:" + std::to_string(x.peer_port);
      members_.push_back(std::move(x));
    }
    for (auto& m : members_) {
      process::spawn_options o;
      o.in = process::stream::null();
      o.out = process::stream::file((dir_.path() / (m.name + ".log")).string());
      o.err = process::stream::same_as_stdout();
      o.parent_death_signal = SIGKILL;
      const auto client = "http://127.0.0.1:" + std::to_string(m.client_port);
      const auto peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
      m.process = process::spawn(etcd_binary,
                                 {"--name", m.name, "--data-dir", (dir_.path() / m.name).string(),
                                  "--listen-client-urls", client, "--advertise-client-urls", client,
                                  "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                  "--initial-cluster", cluster, "--initial-cluster-state", "new",
                                  "--initial-cluster-token", "msomni-test"},
                                 o);
    }
  }
  ~etcd_servers() {
    for (auto& m : members_) {
      m.process.signal(SIGCONT);
      m.process.signal(SIGTERM);
    }
    for (auto& m : members_)
      if (!m.process.wait_for(std::chrono::seconds(20))) m.process.signal(SIGKILL);
  }
  etcd_servers(const etcd_servers&) = delete;
  etcd_servers& operator=(const etcd_servers&) = delete;

  // Every member says it is healthy (/health: it has a raft leader and serves). False after
  // `within`, or when a member ended.
  bool wait_ready(std::chrono::seconds within = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    for (auto& m : members_)
      while (!healthy(m.client_port)) {
        if (std::chrono::steady_clock::now() > deadline || m.process.poll()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    return true;
  }

  // "etcd://127.0.0.1:P1,127.0.0.1:P2,..."
  std::string url() const {
    std::string u = "etcd://";
    for (size_t i = 0; i < members_.size(); ++i) u += (i ? "," : "") + endpoint(i);
    return u;
  }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < members_.size(); ++i) out.push_back(endpoint(i));
    return out;
  }
  std::string endpoint(size_t m) const { return "127.0.0.1:" + std::to_string(members_[m].client_port); }
  void stop(size_t m) {
    members_[m].process.signal(SIGTERM);
    if (!members_[m].process.wait_for(std::chrono::seconds(20))) members_[m].process.signal(SIGKILL);
  }
  void pause(size_t m) { members_[m].process.signal(SIGSTOP); }
  void resume(size_t m) { members_[m].process.signal(SIGCONT); }
  std::string log(size_t m) const { return read_text(dir_.path() / (members_[m].name + ".log")); }

 private:
  struct member {
    std::string name;
    uint16_t client_port = 0, peer_port = 0;
    process::child process;
  };
  temp_dir dir_;
  std::vector<member> members_;
};

}  // namespace msomni::testing
