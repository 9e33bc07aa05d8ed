// Communication probes: UCX's transports, a loopback round trip and bandwidth between this
// process and msomni-health-peer, a ring all-reduce over the planned ranks' count on
// loopback, NCCL (with a GPU), and a TCP connect to every [[cluster.nodes]] host.
#include "health_probes.hpp"

#include "collectives/ring_communicator.hpp"
#include "core/child_process.hpp"
#include "core/sibling_binary.hpp"
#include "device/device_info.hpp"
#include "hub/transport_hub.hpp"
#include "nccl/nccl_info.hpp"
#include "ucx/ucx_node.hpp"

#include <ucp/api/ucp.h>
#ifdef MSOMNI_WITH_NCCL
#include <nccl.h>
#endif

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace msomni::health {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr double max_round_trip_us = 2000.0;
constexpr double min_bandwidth_mb_s = 200.0;
constexpr int64_t default_probe_port = 22;

// The transports (tcp, sysv, posix, cma, ...) a UCP context finds, from its printed resources.
transport_fact probe_transports() {
  transport_fact f;
  f.ucx_version = transport::probe_backends().ucx_version;
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) {
    f.error = "ucp_config_read failed";
    return f;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM;
  ucp_context_h context = nullptr;
  const ucs_status_t s = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (s != UCS_OK) {
    f.error = std::string("ucp_init: ") + ucs_status_string(s);
    return f;
  }
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  ucp_context_print_info(context, out);
  std::fclose(out);
  ucp_cleanup(context);
  std::set<std::string> names;
  std::istringstream in(std::string(text, size));
  std::free(text);
  for (std::string line; std::getline(in, line);) {
    // "#      resource 2  :  md 1  dev 2  flags -- tcp/lo"
    if (line.find("resource") == std::string::npos) continue;
    const auto dashes = line.find("-- ");
    if (dashes == std::string::npos) continue;
    const std::string tl = line.substr(dashes + 3, line.find('/', dashes) - dashes - 3);
    if (!tl.empty()) names.insert(tl);
  }
  f.transports.assign(names.begin(), names.end());
  return f;
}

// Round trips and bulk transfers between this process and a msomni-health-peer child.
loopback_fact probe_loopback(const health_options& o) {
  loopback_fact f;
  std::string binary = o.peer_binary;
  if (binary.empty())
    binary = find_sibling_binary("MSOMNI_HEALTH_PEER", {"msomni-health-peer", "../../actors/health/msomni-health-peer",
                                                        "../actors/health/msomni-health-peer"});
  child_process peer(binary, {});
  const auto addr = peer.read_until("ADDR ", 10s);
  if (!addr) {
    f.error = "msomni-health-peer did not start listening within 10 s";
    return f;
  }
  std::mutex m;
  std::condition_variable cv;
  uint64_t echoes = 0, acks = 0, failed = 0;
  transport::ucx_node_handlers h;
  h.on_frame = [&](const std::string&, const transport::frame_header& fh, std::span<const std::byte>) {
    std::lock_guard<std::mutex> lock(m);
    if (fh.c == 1) ++echoes;
    if (fh.c == 2) ++acks;
    if (fh.c == 3) ++failed;
    cv.notify_all();
  };
  transport::ucx_node_options no;
  no.name = "health-main";
  transport::ucx_node node(no, h);
  node.connect(addr->substr(5));
  if (!node.wait_up("health-peer", 10s)) {
    f.error = "no UCX connection to msomni-health-peer at " + addr->substr(5) + " within 10 s";
    return f;
  }
  auto wait_for = [&](uint64_t& counter, uint64_t want) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, 10s, [&] { return counter >= want || failed > 0; }) && failed == 0;
  };
  const int warmup = 20, rounds = o.level == health_level::quick ? 200 : 2000;
  clock_type::time_point t0;
  for (int i = 0; i < warmup + rounds; ++i) {
    if (i == warmup) t0 = clock_type::now();
    if (!node.send("health-peer", {transport::frame_kind::actor_message, 0, 0, 0, 1, 8}, std::vector<std::byte>(8)) ||
        !wait_for(echoes, uint64_t(i + 1))) {
      f.error = "frame " + std::to_string(i) + " to msomni-health-peer was not echoed within 10 s";
      return f;
    }
  }
  f.round_trip_us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / rounds;
  if (o.level == health_level::full) {
    const size_t chunk = size_t{8} << 20;
    const int chunks = 16;
    std::vector<std::byte> data(chunk, std::byte{7});
    t0 = clock_type::now();
    for (int i = 0; i < chunks; ++i) {
      transport::frame_header bh{transport::frame_kind::bulk, 0, 1, uint64_t(i), 0, chunk};
      if (!node.send_bulk("health-peer", bh, data.data(), [](bool) {}) || !wait_for(acks, uint64_t(i + 1))) {
        f.error = "bulk transfer " + std::to_string(i) + " to msomni-health-peer failed or took over 10 s";
        return f;
      }
    }
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    f.bandwidth_mb_s = s > 0 ? double(chunk) * chunks / 1e6 / s : 0;
  }
  peer.close_stdin();
  peer.wait(5s);
  return f;
}

// A ring all-reduce of `ranks` members, each a transport hub of this process on loopback.
allreduce_fact probe_allreduce(int64_t ranks, int64_t elements) {
  allreduce_fact f;
  f.ranks = ranks;
  f.elements = elements;
  if (ranks < 2) {
    f.error = "";
    return f;
  }
  std::vector<std::unique_ptr<transport::transport_hub>> hubs;
  std::vector<std::string> members;
  for (int64_t r = 0; r < ranks; ++r) {
    transport::ucx_node_options no;
    no.name = "health-rank-" + std::to_string(r);
    members.push_back(no.name);
    hubs.push_back(std::make_unique<transport::transport_hub>(no));
  }
  for (int64_t i = 0; i < ranks; ++i)
    for (int64_t j = i + 1; j < ranks; ++j) hubs[size_t(i)]->node().connect(hubs[size_t(j)]->node().address());
  for (int64_t i = 0; i < ranks; ++i)
    for (int64_t j = 0; j < ranks; ++j)
      if (i != j && !hubs[size_t(i)]->node().wait_up(members[size_t(j)], 10s)) {
        f.error = members[size_t(i)] + " could not reach " + members[size_t(j)] + " within 10 s";
        return f;
      }
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        transport::ring_communicator comm(*hubs[size_t(r)], members, 1, {.timeout = 20s, .same_host = false});
        // Small integers: every partial sum is exact in float32, whatever the order.
        std::vector<float> data(static_cast<size_t>(elements));
        for (int64_t i = 0; i < elements; ++i) data[size_t(i)] = float((i % 7) + r);
        comm.all_reduce(data, transport::reduce_op::sum);
        for (int64_t i = 0; i < elements; ++i) {
          const float want = float(ranks * (i % 7) + ranks * (ranks - 1) / 2);
          if (data[size_t(i)] != want) {
            errors[size_t(r)] = "rank " + std::to_string(r) + ": element " + std::to_string(i) + " is " +
                                std::to_string(data[size_t(i)]) + ", not " + std::to_string(want);
            return;
          }
        }
      } catch (const std::exception& e) {
        errors[size_t(r)] = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (!e.empty()) f.error += (f.error.empty() ? "" : "; ") + e;
  return f;
}

// One NCCL communicator over the first device, made and destroyed: "" when it worked.
std::string nccl_init_problem(int device) {
#ifdef MSOMNI_WITH_NCCL
  ncclComm_t comm = nullptr;
  int devices[1] = {device};
  const ncclResult_t r = ncclCommInitAll(&comm, 1, devices);
  if (r != ncclSuccess) return std::string("ncclCommInitAll on device ") + std::to_string(device) + ": " + ncclGetErrorString(r);
  ncclCommDestroy(comm);
  return "";
#else
  return "built without NCCL";
#endif
}

// A non-blocking TCP connect with a deadline: connected, refused (the host is up), or why not.
reach_fact probe_reach(const config::cluster_node& n, int64_t port, bool required, std::chrono::milliseconds timeout) {
  reach_fact f;
  f.node = n.name;
  f.host = n.host;
  f.port = port;
  f.port_required = required;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(n.host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    f.error = std::string("cannot resolve: ") + ::gai_strerror(rc);
    return f;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int err = 0;
  if (::connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, int(timeout.count())) == 1) {
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      } else {
        err = ETIMEDOUT;
      }
    }
  }
  ::close(fd);
  ::freeaddrinfo(res);
  if (err == 0) f.connected = true;
  else if (err == ECONNREFUSED) f.refused = true;
  else f.error = err == ETIMEDOUT ? "no answer within " + std::to_string(timeout.count()) + " ms" : std::strerror(err);
  return f;
}

}  // namespace

void probe_communication(const config::job_config& cfg, const health_options& o, const add_fn& add) {
  const bool quick = o.level == health_level::quick;
  const auto transports = probe_transports();
  add(judge_transports(transports));
  if (!transports.error.empty()) {
    for (const char* id : {"comm.ucx.loopback", "comm.ucx.bandwidth", "comm.allreduce"})
      add(skipped(id, "UCX is unusable"));
  } else {
    const auto t0 = clock_type::now();
    loopback_fact lf;
    try {
      lf = probe_loopback(o);
    } catch (const std::exception& e) {
      lf.error = e.what();
    }
    auto lat = judge_loopback_latency(lf, max_round_trip_us);
    lat.ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    add(lat);
    if (quick) add(skipped("comm.ucx.bandwidth", "--level quick: bandwidth is measured at --level full"));
    else if (!lf.error.empty()) add(skipped("comm.ucx.bandwidth", "the loopback connection failed"));
    else add(judge_loopback_bandwidth(lf, min_bandwidth_mb_s));
    const int64_t ranks = std::min<int64_t>(ranks_on_this_node(cfg, o.node), 16);
    if (ranks < 2) {
      add(skipped("comm.allreduce", "one rank on this node: nothing to reduce"));
    } else {
      allreduce_fact af;
      try {
        af = probe_allreduce(ranks, quick ? 4099 : (1 << 20) + 1);
      } catch (const std::exception& e) {
        af.ranks = ranks;
        af.error = e.what();
      }
      add(judge_allreduce(af));
    }
  }
  const auto be = transport::probe_backends();
  const auto gpus = kernels::probe_devices().gpus;
  if (gpus.empty()) {
    add(skipped("comm.nccl", "no GPU: NCCL needs one"));
  } else if (!be.nccl_compiled) {
    add(skipped("comm.nccl", "built without NCCL"));
  } else if (const auto problem = nccl_init_problem(gpus.front().index); !problem.empty()) {
    add(judge_problems("comm.nccl", {problem}, ""));
  } else {
    auto r = judge_problems("comm.nccl", {}, be.nccl_version);
    r.reason = "NCCL " + be.nccl_version + ": a one-device communicator was made and destroyed";
    add(r);
  }
  const int64_t port = cfg.health.node_port > 0 ? cfg.health.node_port : default_probe_port;
  for (const auto& n : cfg.cluster.nodes)
    add(judge_reach(probe_reach(n, port, cfg.health.node_port > 0, quick ? 1000ms : 3000ms)));
}

}  // namespace msomni::health
