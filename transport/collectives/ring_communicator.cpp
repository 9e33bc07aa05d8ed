// ring_communicator (see ring_communicator.hpp).
#include "collectives/ring_communicator.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

namespace msomni::transport {

namespace {

// Completion of one zero-copy send, waited on by the collective's thread.
struct send_flag {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  bool ok = false;
};

}  // namespace

ring_communicator::ring_communicator(transport_hub& hub, std::vector<std::string> members,
                                     uint64_t epoch, std::chrono::milliseconds timeout)
    : hub_(hub), members_(std::move(members)), epoch_(epoch), timeout_(timeout) {
  const auto it = std::find(members_.begin(), members_.end(), hub_.node().name());
  if (it == members_.end())
    throw collective_error("ring: this node (" + hub_.node().name() + ") is not a member");
  rank_ = static_cast<int>(it - members_.begin());
  for (const auto& m : members_)
    if (m != hub_.node().name() && !hub_.node().is_up(m))
      throw collective_error("ring epoch " + std::to_string(epoch) + ": member " + m + " is not connected");
  hub_.mailbox().retire_below(epoch_);
}

void ring_communicator::send_to_next(uint64_t seq, uint64_t step, std::span<const std::byte> send) {
  if (send.empty()) return;
  const auto& next = members_[(rank_ + 1) % members_.size()];
  auto flag = std::make_shared<send_flag>();
  frame_header h{frame_kind::collective, 0, epoch_, seq, step, send.size()};
  const bool queued = hub_.node().send_bulk(next, h, send.data(), [flag](bool ok) {
    std::lock_guard<std::mutex> lock(flag->m);
    flag->done = true;
    flag->ok = ok;
    flag->cv.notify_all();
  });
  if (!queued) throw collective_error("ring: cannot send to " + next + " (down or queue full)");
  std::unique_lock<std::mutex> lock(flag->m);
  if (!flag->cv.wait_for(lock, timeout_, [&] { return flag->done; }) || !flag->ok)
    throw collective_error("ring: send to " + next + " failed or timed out");
}

void ring_communicator::recv_from_prev(uint64_t seq, uint64_t step, std::span<std::byte> recv) {
  if (recv.empty()) return;
  const auto& prev = members_[(rank_ + members_.size() - 1) % members_.size()];
  hub_.mailbox().wait({epoch_, seq, step}, prev, std::chrono::steady_clock::now() + timeout_);
}

void ring_communicator::exchange(uint64_t seq, uint64_t step, std::span<const std::byte> send,
                                 std::span<std::byte> recv) {
  const auto& prev = members_[(rank_ + members_.size() - 1) % members_.size()];
  if (!recv.empty()) hub_.mailbox().expect({epoch_, seq, step}, prev, recv.data(), recv.size());
  send_to_next(seq, step, send);
  recv_from_prev(seq, step, recv);
}

void ring_communicator::all_reduce(std::span<float> data, reduce_op op) {
  const size_t n = members_.size();
  const uint64_t seq = ++seq_;
  if (n > 1 && !data.empty()) {
    scratch_.resize(chunk_of(data.size(), n, 0).count);
    auto bytes_of = [&](size_t chunk) {
      const auto r = chunk_of(data.size(), n, chunk);
      return std::as_writable_bytes(data.subspan(r.offset, r.count));
    };
    // Reduce-scatter: after step s, chunk (rank - s - 1) holds s + 2 contributions.
    for (size_t s = 0; s + 1 < n; ++s) {
      const size_t send_chunk = (rank_ + n - s) % n;
      const size_t recv_chunk = (rank_ + n - s - 1) % n;
      const auto r = chunk_of(data.size(), n, recv_chunk);
      auto scratch = std::as_writable_bytes(std::span<float>(scratch_.data(), r.count));
      exchange(seq, s, bytes_of(send_chunk), scratch);
      float* dst = data.data() + r.offset;
      for (size_t i = 0; i < r.count; ++i) dst[i] += scratch_[i];
    }
    // All-gather: the fully reduced chunk (rank + 1) travels round the ring.
    for (size_t s = 0; s + 1 < n; ++s) {
      const size_t send_chunk = (rank_ + 1 + n - s) % n;
      const size_t recv_chunk = (rank_ + n - s) % n;
      exchange(seq, n + s, bytes_of(send_chunk), bytes_of(recv_chunk));
    }
  }
  if (op == reduce_op::mean) {
    const float inv = 1.0f / static_cast<float>(n);
    for (auto& v : data) v *= inv;
  }
}

void ring_communicator::broadcast(std::span<std::byte> data, int root) {
  const size_t n = members_.size();
  const uint64_t seq = ++seq_;
  if (n < 2 || data.empty()) return;
  if (root < 0 || static_cast<size_t>(root) >= n) throw collective_error("broadcast: bad root");
  const size_t dist = (rank_ + n - root) % n;  // hops from the root
  const auto& prev = members_[(rank_ + n - 1) % n];
  if (dist != 0) {
    hub_.mailbox().expect({epoch_, seq, 0}, prev, data.data(), data.size());
    recv_from_prev(seq, 0, data);
  }
  if (dist + 1 < n) send_to_next(seq, 0, data);
}

}  // namespace msomni::transport
