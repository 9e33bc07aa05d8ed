// same_host_all_reduce, same_host_broadcast (see same_host_collectives.hpp).
#include "collectives/same_host_collectives.hpp"

#include "collectives/communicator.hpp"
#include "collectives/reduce_kernel.hpp"

#include <algorithm>

namespace msomni::transport {

namespace {

// The peer's bytes come through a buffer this size, summed while still in cache.
constexpr size_t block_floats = 64 * 1024;

using stage = same_host_group::stage;

void wait_all_entered(same_host_group& g, uint64_t seq, uint64_t bytes, const same_host_limits& limits,
                      std::chrono::steady_clock::time_point deadline) {
  for (int m = 0; m < g.size(); ++m) {
    if (m == g.rank()) continue;
    g.wait(m, stage::entered, seq, deadline, limits.abort_reason);
    if (g.bytes_of(m) != bytes)
      throw collective_error("same-host collective: member " + std::to_string(m) + " passed " +
                             std::to_string(g.bytes_of(m)) + " bytes, this member " + std::to_string(bytes));
  }
}

}  // namespace

void same_host_all_reduce(same_host_group& g, uint64_t seq, std::span<float> data, std::vector<float>& scratch,
                          const same_host_limits& limits) {
  const int n = g.size(), r = g.rank();
  const auto deadline = [&] { return std::chrono::steady_clock::now() + limits.timeout; };
  g.publish(seq, data.data(), data.size_bytes());
  wait_all_entered(g, seq, data.size_bytes(), limits, deadline());
  // Reduce the chunk this member owns. Nobody else writes it; the others read only their
  // own chunk of this buffer until they have reduced it.
  const auto own = chunk_of(data.size(), size_t(n), size_t(r));
  scratch.resize(std::min(block_floats, std::max<size_t>(own.count, 1)));
  for (size_t off = 0; off < own.count; off += block_floats) {
    const size_t count = std::min(block_floats, own.count - off);
    float* dst = data.data() + own.offset + off;
    for (int k = 1; k < n; ++k) {
      const int m = (r + k) % n;
      g.read(m, g.address_of(m) + (own.offset + off) * sizeof(float), scratch.data(), count * sizeof(float));
      add_into(dst, scratch.data(), count);
    }
  }
  g.mark(stage::reduced, seq);
  // Gather the chunks the others own. A member's 'reduced' also says it has finished reading
  // this buffer's chunk of it, so overwriting that chunk here is safe.
  for (int k = 1; k < n; ++k) {
    const int m = (r + k) % n;
    g.wait(m, stage::reduced, seq, deadline(), limits.abort_reason);
    const auto c = chunk_of(data.size(), size_t(n), size_t(m));
    if (c.count > 0) g.read(m, g.address_of(m) + c.offset * sizeof(float), data.data() + c.offset, c.count * sizeof(float));
  }
  g.mark(stage::finished, seq);
  // The caller may change the buffer once nobody reads it any more.
  for (int m = 0; m < n; ++m)
    if (m != r) g.wait(m, stage::finished, seq, deadline(), limits.abort_reason);
}

void same_host_broadcast(same_host_group& g, uint64_t seq, std::span<std::byte> data, int root,
                         const same_host_limits& limits) {
  const auto deadline = [&] { return std::chrono::steady_clock::now() + limits.timeout; };
  g.publish(seq, data.data(), data.size());
  if (g.rank() == root) {
    g.mark(stage::reduced, seq);
    for (int m = 0; m < g.size(); ++m)
      if (m != root) g.wait(m, stage::finished, seq, deadline(), limits.abort_reason);
    g.mark(stage::finished, seq);
    return;
  }
  g.wait(root, stage::entered, seq, deadline(), limits.abort_reason);
  if (g.bytes_of(root) != data.size())
    throw collective_error("same-host broadcast: the root passed " + std::to_string(g.bytes_of(root)) +
                           " bytes, this member " + std::to_string(data.size()));
  if (!data.empty()) g.read(root, g.address_of(root), data.data(), data.size());
  g.mark(stage::reduced, seq);
  g.mark(stage::finished, seq);
}

}  // namespace msomni::transport
