// One rank of the all-reduce benchmark (driven by bench_allreduce.py, same ADDR/PEER/GO
// protocol as the transport tests). Rank 0 prints "BENCH <bytes> <seconds per op>".
#include "collectives/ring_communicator.hpp"
#include "core/command_line.hpp"
#include "hub/peer_wiring.hpp"
#include "hub/transport_hub.hpp"

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

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
  std::string name = "bench0";
  // Optional size range (bytes) and iteration override, for profiling one size.
  size_t min_bytes = 4096, max_bytes = size_t{64} << 20;
  int iters_override = 0;
  using msomni::command_line::add_number;
  CLI::App app{"One rank of the all-reduce benchmark (bench_allreduce.py drives it over stdin/stdout).",
               "msomni-bench-allreduce-node"};
  msomni::command_line::set_conventions(app);
  app.add_option("NAME", name, "this node's name")->capture_default_str();
  add_number(app, "MIN_BYTES", min_bytes, msomni::config::limits::range<uint64_t>{4, uint64_t{1} << 34},
             "smallest message; sizes grow 4x");
  add_number(app, "MAX_BYTES", max_bytes, msomni::config::limits::range<uint64_t>{4, uint64_t{1} << 34},
             "largest message");
  add_number(app, "ITERS", iters_override, msomni::config::limits::range<int64_t>{0, 1 << 20},
             "timed operations per size (0: 50, 10 or 5 by size)");
  int64_t busy_poll_us = 0;
  add_number(app, "--busy-poll-us", busy_poll_us, msomni::config::limits::range<int64_t>{0, 1000000},
             "the progress thread's latency mode (ucx_node_options::busy_poll); ranks run 0");
  bool same_host = true;
  app.add_option_function<std::string>(
         "--same-host", [&](const std::string& v) { same_host = v == "1"; },
         "1: same-host members read each other's buffers (ring_options::same_host); 0: UCX frames")
      ->check(CLI::IsMember({"0", "1"}))
      ->default_str("1");
  if (const auto rc = msomni::command_line::parse(app, argc, argv)) return *rc;
  transport_hub hub(node_named(name, busy_poll_us));
  std::vector<std::string> members;
  try {
    members = msomni::transport::wire_peers(hub, name, 20s, std::cin, std::cout);
  } catch (const std::exception&) {
    return 1;
  }
  ring_communicator comm(hub, members, 1, {.same_host = same_host});
  if (name == members.front()) std::cout << "BACKEND " << comm.backend() << std::endl;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    std::vector<float> data(bytes / 4, 1.0f);
    const int iters =
        iters_override > 0 ? iters_override : (bytes <= (1 << 20) ? 50 : (bytes <= (16 << 20) ? 10 : 5));
    comm.all_reduce(data, reduce_op::sum);  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) comm.all_reduce(data, reduce_op::sum);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (comm.rank() == 0) std::cout << "BENCH " << bytes << " " << s << std::endl;
  }
  std::cout << "DONE" << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
  return 0;
}
