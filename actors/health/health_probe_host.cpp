// Host probes: the kernel clock's synchronisation (adjtimex), file and locked-memory limits,
// MemAvailable against the model's estimate for this node's ranks, the control and metrics
// ports, and the CPU frequency governor.
#include "health_probes.hpp"

#include "device/device_info.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timex.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace msomni::health {

std::string port_bind_problem(const std::string& host, int64_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket(): ") + std::strerror(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return "cluster.control_host \"" + host + "\" is not an IPv4 address";
  }
  std::string problem;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    problem = "port " + std::to_string(port) + " on " + host + " is not free: " + std::strerror(errno);
  ::close(fd);
  return problem;
}

namespace {

constexpr int64_t max_clock_error_us = 100000;  // event times of nodes compared to 0.1 s
constexpr uint64_t wanted_open_files = 4096;    // shards, UCX endpoints and logs of a node's ranks
constexpr uint64_t wanted_memlock_gpu = uint64_t{1} << 30;  // pinned batch memory of the ranks
constexpr uint64_t wanted_memlock_cpu = uint64_t{64} << 10;

uint64_t soft_limit(int resource) {
  rlimit l{};
  if (::getrlimit(resource, &l) != 0) return 0;
  return l.rlim_cur == RLIM_INFINITY ? std::numeric_limits<uint64_t>::max() : uint64_t(l.rlim_cur);
}

std::optional<uint64_t> mem_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream s(line.substr(13));
      uint64_t kb = 0;
      if (s >> kb) return kb * 1024;
    }
  return std::nullopt;
}

}  // namespace

void probe_host(const config::job_config& cfg, const health_options& o, const add_fn& add) {
  clock_fact cf;
  timex tx{};
  const int state = ::adjtimex(&tx);
  if (state < 0) cf.error = std::strerror(errno);
  cf.state = state;
  cf.maxerror_us = tx.maxerror;
  cf.one_host = o.node.empty() && cfg.cluster.nodes.empty() && cfg.control.store.empty();
  add(judge_clock(cf, max_clock_error_us));

  add(judge_limit({"host.nofile", "RLIMIT_NOFILE", soft_limit(RLIMIT_NOFILE), wanted_open_files, false}));
  const bool gpus = !kernels::probe_devices().gpus.empty();
  add(judge_limit({"host.memlock", gpus ? "RLIMIT_MEMLOCK (pinned batch memory)" : "RLIMIT_MEMLOCK (no GPU: little is pinned)",
                   soft_limit(RLIMIT_MEMLOCK), gpus ? wanted_memlock_gpu : wanted_memlock_cpu, false}));

  memory_fact mf;
  std::string why;
  const auto estimate = estimate_model_memory(cfg, why);
  const auto available = mem_available();
  if (!estimate) mf.error = why;
  else if (!available) mf.error = "no MemAvailable in /proc/meminfo";
  else {
    mf.available_bytes = *available;
    mf.per_rank_bytes = uint64_t(estimate->total());
    mf.ranks_on_node = ranks_on_this_node(cfg, o.node);
  }
  add(judge_memory(mf));

  const auto& c = cfg.cluster;
  if (!o.node.empty()) {
    for (const char* id : {"host.port.control", "host.port.metrics"})
      add(skipped(id, "the control process's port: checked on the control node"));
  } else {
    add(judge_port("host.port.control", "cluster.control_port", c.control_port,
                   c.control_port > 0 ? port_bind_problem(c.control_host, c.control_port) : ""));
    if (c.metrics_port == 0) add(skipped("host.port.metrics", "cluster.metrics_port = 0: metrics are off"));
    else if (c.metrics_port == config::metrics_port_auto)
      add(judge_port("host.port.metrics", "cluster.metrics_port = \"auto\"", 0, ""));
    else
      add(judge_port("host.port.metrics", "cluster.metrics_port", c.metrics_port,
                     port_bind_problem(c.control_host, c.metrics_port)));
  }

  std::optional<std::string> governor;
  if (std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); in) {
    std::string g;
    if (in >> g) governor = g;
  }
  add(judge_governor(governor));
}

}  // namespace msomni::health
