// Real servers on loopback for the remote-source tests: the project's fault-injecting HTTP
// server (tools/fault_proxy/fault_proxy.py: a directory with byte ranges, or a proxy in
// front of another store) and s3rver (npm, tools/node_modules). Each runs in its own process
// group with a parent-death signal, is stopped (SIGTERM, then SIGKILL) when its handle goes,
// and keeps its files in a temporary directory removed with it.
#pragma once

#include "data_test_support.hpp"
#include "remote_io.hpp"
#include "support/free_port.hpp"

#include "core/process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace msomni::testing {

inline const std::string source_root = MSOMNI_SOURCE_DIR;
inline const std::string fault_proxy_script = source_root + "/tools/fault_proxy/fault_proxy.py";
inline const std::string s3rver_binary = source_root + "/tools/node_modules/.bin/s3rver";

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Puts `file` at `url` (an object of a local S3-compatible server) with a SigV4-signed PUT,
// signed with the process's remote io settings. Returns the HTTP status and the answer.
inline data::http_response put_object(const std::string& url, const std::filesystem::path& file) {
  data::http_request put;
  put.method = "PUT";
  put.url = url;
  put.body = slurp(file);
  put.sign_s3 = true;
  return data::http_fetch(put);
}

inline bool port_open(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// Why s3rver cannot run here ("" when it can).
inline std::string s3rver_missing() {
  if (!std::filesystem::exists(s3rver_binary)) return "s3rver is not installed in tools/node_modules (run tools/bootstrap.sh)";
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node is not installed";
  return "";
}

class loopback_server {
 public:
  loopback_server() = default;
  loopback_server(const loopback_server&) = delete;
  loopback_server& operator=(const loopback_server&) = delete;
  ~loopback_server() { stop(); }

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::filesystem::path& dir() const { return dir_.path(); }

  void stop() {
    if (!proc_.running()) return;
    proc_.signal_group(SIGTERM);
    if (!proc_.wait_for(std::chrono::seconds(10))) {
      proc_.signal_group(SIGKILL);
      proc_.wait();
    }
  }

 protected:
  void start(const std::vector<std::string>& argv) {
    process::spawn_options o;
    o.in = process::stream::null();
    o.out = process::stream::file((dir_.path() / "server.log").string());
    o.err = process::stream::same_as_stdout();
    o.parent_death_signal = SIGKILL;
    o.search_path = true;
    o.end_group_on_exit = true;
    proc_ = process::spawn(argv, o);
    for (int i = 0; i < 300 && !port_open(port_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!port_open(port_)) throw std::runtime_error("server on port " + std::to_string(port_) + " did not start: " +
                                                    slurp(dir_.path() / "server.log"));
  }
  temp_dir dir_;
  uint16_t port_ = free_loopback_port();
  process::child proc_;
};

struct fault_options {
  int every = 0;            // every Nth request gets the next fault
  std::string faults;       // e.g. "503,reset,short"
  double stall_s = 5;
};

// tools/fault_proxy/fault_proxy.py serving `root` or forwarding to `upstream`.
class fault_server : public loopback_server {
 public:
  fault_server(const std::string& root_or_upstream, bool upstream, fault_options f = {}) {
    std::vector<std::string> argv{"python3", fault_proxy_script, "--port", std::to_string(port_),
                                  upstream ? "--upstream" : "--serve", root_or_upstream,
                                  "--stats", stats_path()};
    if (f.every > 0) {
      argv.insert(argv.end(), {"--every", std::to_string(f.every), "--faults", f.faults, "--stall-s",
                               std::to_string(f.stall_s)});
    }
    start(argv);
  }
  std::string stats_path() const { return (dir_.path() / "stats.json").string(); }
  std::string stats() const { return slurp(stats_path()); }
};

// s3rver with its store in a temporary directory and bucket `bucket` made at start.
class s3rver_server : public loopback_server {
 public:
  explicit s3rver_server(const std::string& bucket) {
    std::filesystem::create_directories(dir_.path() / "store");
    start({"node", s3rver_binary, "-d", (dir_.path() / "store").string(), "-a", "127.0.0.1", "-p",
           std::to_string(port_), "--silent", "--configure-bucket", bucket});
  }
};

}  // namespace msomni::testing
