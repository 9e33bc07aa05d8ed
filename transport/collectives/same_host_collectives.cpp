// same_host_all_reduce, same_host_broadcast (see same_host_collectives.hpp).
#include "collectives/same_host_collectives.hpp"

#include "collectives/communicator.hpp"
#include "collectives/reduce_kernel.hpp"

#include <algorithm>
#include <cstring>

namespace msomni::transport {

namespace {

// Slices of the buffer go through the shared areas one after another, so the areas stay
// this size whatever the buffer's, and a slice's input is still in cache when it is summed.
constexpr size_t slice_floats = size_t{1} << 20;
// Within a chunk, each block's partial sum stays in cache while every member's part is added.
constexpr size_t block_floats = 16 * 1024;
// Up to this many bytes times the members, every member sums the whole buffer itself (one
// synchronisation instead of two, each element summed n times instead of once).
constexpr size_t whole_limit_bytes = size_t{512} << 10;

using stage = same_host_group::stage;
using area = same_host_group::area;

void wait_all_entered(same_host_group& g, uint64_t step, uint64_t bytes, const same_host_limits& limits,
                      std::chrono::steady_clock::time_point deadline) {
  for (int m = 0; m < g.size(); ++m) {
    if (m == g.rank()) continue;
    g.wait(m, stage::entered, step, deadline, limits.abort_reason);
    if (g.bytes_of(m, step) != bytes)
      throw collective_error("same-host collective: member " + std::to_string(m) + " passed " +
                             std::to_string(g.bytes_of(m, step)) + " bytes, this member " + std::to_string(bytes));
  }
}

// Sums elements [lo, hi) of the whole buffer into `sum`, each in the UCX ring's order for
// its ring chunk c (of the whole buffer, not the slice): x[c] + x[c+1] + ... + x[c-1]
// (x[c+1] + x[c] is the same bits as x[c] + x[c+1]). parts[m] is member m's copy of the
// slice, which starts at element `slice_at`.
void sum_in_ring_order(std::span<const float* const> parts, size_t total, size_t slice_at, size_t lo, size_t hi,
                       float* sum) {
  const size_t n = parts.size();
  for (size_t c = 0; c < n; ++c) {
    const auto ring = chunk_of(total, n, c);
    const size_t from = std::max(lo, ring.offset), to = std::min(hi, ring.offset + ring.count);
    for (size_t b = from; b < to; b += block_floats) {
      const size_t count = std::min(block_floats, to - b), at = b - slice_at;
      float* dst = sum + (b - lo);
      sum_into(dst, parts[(c + 1) % n] + at, parts[c] + at, count);
      for (size_t k = 2; k < n; ++k) add_into(dst, parts[(c + k) % n] + at, count);
    }
  }
}

// Every member's copy of the operands: area `a` of each other member, `own` for this one.
std::vector<const float*> member_parts(same_host_group& g, area a, const float* own) {
  std::vector<const float*> parts(static_cast<size_t>(g.size()));
  for (int m = 0; m < g.size(); ++m)
    parts[size_t(m)] = m == g.rank() ? own : reinterpret_cast<const float*>(g.area_of(m, a));
  return parts;
}

// One slice of `data` (elements `at` .. `at` + `count`): input out, this member's share
// summed, every share gathered.
void reduce_slice(same_host_group& g, std::span<float> data, size_t at, size_t count, const same_host_limits& limits) {
  const auto slice = data.subspan(at, count);
  const int n = g.size(), r = g.rank();
  const auto deadline = [&] { return std::chrono::steady_clock::now() + limits.timeout; };
  const uint64_t step = g.next_step();
  // Nobody reads this member's input area now: they all finished the last step's sums
  // before it finished its gather.
  auto* input = reinterpret_cast<float*>(g.own_area(area::input, slice.size_bytes()));
  for (int c = 0; c < n; ++c) {
    if (c == r) continue;  // the chunk this member sums itself: read in place
    const auto part = chunk_of(slice.size(), size_t(n), size_t(c));
    std::memcpy(input + part.offset, slice.data() + part.offset, part.count * sizeof(float));
  }
  g.publish(step, slice.data(), slice.size_bytes());
  // Every member entered this step, so every member has finished the last one: nobody reads
  // this member's reduced area any more.
  wait_all_entered(g, step, slice.size_bytes(), limits, deadline());
  const auto own = chunk_of(slice.size(), size_t(n), size_t(r));
  auto* sum = reinterpret_cast<float*>(g.own_area(area::reduced, std::max<size_t>(own.count, 1) * sizeof(float)));
  const auto parts = member_parts(g, area::input, slice.data());
  for (size_t off = 0; off < own.count; off += block_floats) {
    const size_t len = std::min(block_floats, own.count - off), lo = at + own.offset + off;
    sum_in_ring_order(parts, data.size(), at, lo, lo + len, sum + off);
    std::memcpy(slice.data() + own.offset + off, sum + off, len * sizeof(float));  // while it is in cache
  }
  g.mark(stage::reduced, step);
  // Gather. An owner's 'reduced' also says it has read all it needs of this member's input.
  for (int k = 1; k < n; ++k) {
    const int m = (r + k) % n;
    g.wait(m, stage::reduced, step, deadline(), limits.abort_reason);
    const auto part = chunk_of(slice.size(), size_t(n), size_t(m));
    if (part.count > 0) std::memcpy(slice.data() + part.offset, g.area_of(m, area::reduced), part.count * sizeof(float));
  }
}

// A small buffer in one synchronisation: every member shares its whole input and sums every
// element itself (the same operands in the same order everywhere, so the same bits). With
// one synchronisation a member may start the next step while another still reads this
// one's inputs, so even and odd steps use their own area: the one a step writes (or grows)
// was last read two steps ago, and every member has entered a later step since.
void reduce_whole(same_host_group& g, std::span<float> data, const same_host_limits& limits) {
  const uint64_t step = g.next_step();
  const area whole = step % 2 == 0 ? area::whole_even : area::whole_odd;
  auto* mine = reinterpret_cast<float*>(g.own_area(whole, data.size_bytes()));
  std::memcpy(mine, data.data(), data.size_bytes());
  g.publish(step, data.data(), data.size_bytes());
  wait_all_entered(g, step, data.size_bytes(), limits, std::chrono::steady_clock::now() + limits.timeout);
  sum_in_ring_order(member_parts(g, whole, mine), data.size(), 0, 0, data.size(), data.data());
}

}  // namespace

void same_host_all_reduce(same_host_group& g, std::span<float> data, const same_host_limits& limits) {
  if (data.size_bytes() * size_t(g.size()) <= whole_limit_bytes) return reduce_whole(g, data, limits);
  for (size_t off = 0; off < data.size(); off += slice_floats)
    reduce_slice(g, data, off, std::min(slice_floats, data.size() - off), limits);
}

void same_host_broadcast(same_host_group& g, std::span<std::byte> data, int root, const same_host_limits& limits) {
  const auto deadline = [&] { return std::chrono::steady_clock::now() + limits.timeout; };
  const uint64_t seq = g.next_step();
  g.publish(seq, data.data(), data.size());
  if (g.rank() == root) {
    for (int m = 0; m < g.size(); ++m)
      if (m != root) g.wait(m, stage::finished, seq, deadline(), limits.abort_reason);
    g.mark(stage::finished, seq);
    return;
  }
  // Every member, not only the root: no member may finish a step before all have entered
  // it, or one could run two steps ahead of another and reuse what that one still reads.
  wait_all_entered(g, seq, data.size(), limits, deadline());
  if (!data.empty()) g.read(root, g.address_of(root, seq), data.data(), data.size());
  g.mark(stage::finished, seq);
}

}  // namespace msomni::transport
