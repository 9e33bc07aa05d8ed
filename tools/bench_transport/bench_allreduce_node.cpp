// One rank of the all-reduce benchmark (driven by bench_allreduce.py, same ADDR/PEER/GO
// protocol as the transport tests). Rank 0 prints "BENCH <bytes> <seconds per op>".
#include "collectives/ring_communicator.hpp"
#include "hub/transport_hub.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace msomni::transport;
using namespace std::chrono_literals;

// A node with the defaults and this name (the benchmarks run without a job secret).
static ucx_node_options node_named(const std::string& name) {
  ucx_node_options o;
  o.name = name;
  return o;
}

int main(int argc, char** argv) {
  std::string name = argc > 1 ? argv[1] : "bench0";
  // Optional size range (bytes) and iteration override, for profiling one size.
  const size_t min_bytes = argc > 2 ? std::stoull(argv[2]) : 4096;
  const size_t max_bytes = argc > 3 ? std::stoull(argv[3]) : size_t{64} << 20;
  const int iters_override = argc > 4 ? std::stoi(argv[4]) : 0;
  transport_hub hub(node_named(name));
  std::cout << "ADDR " << name << " " << hub.node().address() << std::endl;
  std::vector<std::string> members{name};
  std::vector<std::pair<std::string, std::string>> peers;
  for (std::string line; std::getline(std::cin, line) && line != "GO";) {
    std::istringstream in(line);
    std::string tag, n, a;
    in >> tag >> n >> a;
    if (n != name) peers.emplace_back(n, a), members.push_back(n);
  }
  for (auto& [n, a] : peers)
    if (n < name) hub.node().connect(a);
  for (auto& [n, a] : peers)
    if (!hub.node().wait_up(n, 20s)) return 1;
  std::sort(members.begin(), members.end());
  ring_communicator comm(hub, members, 1);
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
