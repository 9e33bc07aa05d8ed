// ring_communicator (see ring_communicator.hpp).
#include "collectives/ring_communicator.hpp"

#include "collectives/reduce_kernel.hpp"
#include "collectives/same_host_collectives.hpp"
#include "core/log.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>

namespace msomni::transport {

namespace {

// Segments travel independently so a ring step's transfer overlaps the reduction of the
// segments that already landed, and a reduced segment moves on at once.
constexpr size_t segment_bytes = 1024 * 1024;

uint64_t step_key(uint64_t step, size_t segment) { return (step << 32) | segment; }

// Outstanding zero-copy sends, waited on before their bytes may change.
// Shared with the completion callbacks, so a collective that throws never leaves a
// callback pointing at freed memory.
class send_tracker : public std::enable_shared_from_this<send_tracker> {
 public:
  std::function<void(bool)> start() {
    std::lock_guard<std::mutex> lock(m_);
    ++pending_;
    return [self = shared_from_this()](bool ok) {
      std::lock_guard<std::mutex> lock(self->m_);
      --self->pending_;
      self->failed_ = self->failed_ || !ok;
      self->cv_.notify_all();
    };
  }
  bool wait_all(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(m_);
    return cv_.wait_for(lock, timeout, [&] { return pending_ == 0; }) && !failed_;
  }
  bool idle() {
    std::lock_guard<std::mutex> lock(m_);
    return pending_ == 0;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  size_t pending_ = 0;
  bool failed_ = false;
};

// Waits for every outstanding send. UCX may never complete a send to a same-host peer that
// died (no UCX error mode there), so the wait also watches the peers and the epoch.
void wait_sends(transport_hub& hub, std::span<const std::string> peers, uint64_t epoch, send_tracker& sends,
                std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  auto fail = [&](const std::string& why) {
    throw collective_error("ring epoch " + std::to_string(epoch) + ": " + why);
  };
  while (!sends.idle()) {
    for (const auto& p : peers)
      if (!hub.node().is_up(p)) fail("peer " + p + " is down");
    if (hub.mailbox().superseded(epoch)) fail("superseded");
    if (std::chrono::steady_clock::now() >= until) fail("a send timed out");
    sends.wait_all(std::chrono::milliseconds(10));
  }
  if (!sends.wait_all(std::chrono::milliseconds(0))) fail("a send failed");
}

// How long a failed collective waits for its in-flight transfers before it rethrows.
constexpr auto settle_timeout = std::chrono::seconds(2);

// After a failure of operation `seq`: let the sends reading the caller's buffers and the
// receives writing into them finish (bounded), so the caller may free them once we throw.
// Sends to a peer that is down are not waited for: its endpoint is closed, nobody reads them.
void settle(transport_hub& hub, std::span<const std::string> peers, uint64_t epoch, uint64_t seq,
            send_tracker& sends) {
  const auto until = std::chrono::steady_clock::now() + settle_timeout;
  auto all_up = [&] {
    return std::all_of(peers.begin(), peers.end(), [&](const std::string& p) { return hub.node().is_up(p); });
  };
  while (!sends.idle() && std::chrono::steady_clock::now() < until && all_up())
    sends.wait_all(std::chrono::milliseconds(10));
  hub.mailbox().withdraw(epoch, seq, until);
}

// The node polls without sleeping while a collective runs (see ucx_node::hold_polling).
class polling_hold {
 public:
  explicit polling_hold(ucx_node& n) : n_(n) { n_.hold_polling(); }
  ~polling_hold() { n_.release_polling(); }
  polling_hold(const polling_hold&) = delete;
  polling_hold& operator=(const polling_hold&) = delete;

 private:
  ucx_node& n_;
};

}  // namespace

ring_communicator::ring_communicator(transport_hub& hub, std::vector<std::string> members,
                                     uint64_t epoch, ring_options options)
    : hub_(hub), members_(std::move(members)), epoch_(epoch), options_(options) {
  const auto it = std::find(members_.begin(), members_.end(), hub_.node().name());
  if (it == members_.end())
    throw collective_error("ring: this node (" + hub_.node().name() + ") is not a member");
  rank_ = static_cast<int>(it - members_.begin());
  for (const auto& m : members_)
    if (m != hub_.node().name() && !hub_.node().is_up(m))
      throw collective_error("ring epoch " + std::to_string(epoch) + ": member " + m + " is not connected");
  hub_.mailbox().retire_below(epoch_);
  if (options_.same_host && members_.size() > 1) agree_on_same_host();
}

ring_communicator::~ring_communicator() = default;

const char* ring_communicator::backend() const { return same_host_ ? "same-host" : "ucx-ring"; }

uint64_t ring_communicator::shared_bytes() const { return same_host_ ? same_host_->shared_bytes() : 0; }

std::string ring_communicator::why_stop() const {
  for (const auto& m : members_)
    if (m != hub_.node().name() && !hub_.node().is_up(m)) return "peer " + m + " is down";
  if (hub_.mailbox().superseded(epoch_)) return "epoch " + std::to_string(epoch_) + " superseded";
  return {};
}

std::vector<std::byte> ring_communicator::all_gather_small(std::span<const std::byte> mine) {
  const size_t n = members_.size(), size = mine.size();
  const uint64_t seq = ++seq_;
  std::vector<std::byte> all(n * size);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<ptrdiff_t>(size_t(rank_) * size));
  std::vector<std::string> peers;
  for (size_t m = 0; m < n; ++m)
    if (int(m) != rank_) {
      peers.push_back(members_[m]);
      hub_.mailbox().expect({epoch_, seq, m}, members_[m], all.data() + m * size, size);
    }
  auto sends = std::make_shared<send_tracker>();
  try {
    const std::byte* own = all.data() + size_t(rank_) * size;
    for (const auto& p : peers) {
      frame_header h{frame_kind::collective, 0, epoch_, seq, uint64_t(rank_), size};
      auto done = sends->start();
      if (!hub_.node().send_bulk(p, h, own, done)) {
        done(false);
        throw collective_error("ring epoch " + std::to_string(epoch_) + ": cannot send to " + p);
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    for (size_t m = 0; m < n; ++m)
      if (int(m) != rank_) hub_.mailbox().wait({epoch_, seq, m}, members_[m], deadline);
    wait_sends(hub_, peers, epoch_, *sends, options_.timeout);
  } catch (const collective_error&) {
    settle(hub_, peers, epoch_, seq, *sends);
    throw;
  }
  return all;
}

void ring_communicator::agree_on_same_host() {
  // Round one: who is where (and each member's control page); every member decides the same.
  std::unique_ptr<same_host_group> group;
  try {
    group = std::make_unique<same_host_group>();
  } catch (const collective_error&) {
    // No page here: the record offers none, so every member stays on UCX.
  }
  const auto me = group ? this_process_identity(group->page_fd(), group->page_token(), group->token_address())
                        : this_process_identity(-1, 0, 0);
  const auto bytes = all_gather_small(std::as_bytes(std::span(&me, 1)));
  std::vector<host_identity> ids(members_.size());
  std::memcpy(ids.data(), bytes.data(), bytes.size());
  if (!share_one_host(ids)) return;
  // Round two: did every member map every other's page? Only then do all switch.
  const std::string why = group->attach(ids, rank_);
  const uint8_t ok = why.empty() ? 1 : 0;
  const auto oks = all_gather_small(std::as_bytes(std::span(&ok, 1)));
  group->close_page_fd();
  if (std::all_of(oks.begin(), oks.end(), [](std::byte b) { return b == std::byte{1}; })) {
    same_host_ = std::move(group);
    return;
  }
  // On one host, yet not every member could reach every other's memory: all stay on UCX.
  MSOMNI_LOG(warn, "collectives") << "epoch " << epoch_ << ": the members share this host but keep UCX frames"
                                  << (why.empty() ? std::string(" (another member could not attach)") : ": " + why);
}

void ring_communicator::send_segment(uint64_t seq, uint64_t key, std::span<const std::byte> bytes,
                                     std::function<void(bool)> done) {
  frame_header h{frame_kind::collective, 0, epoch_, seq, key, bytes.size()};
  if (!hub_.node().send_bulk(next(), h, bytes.data(), done)) {
    done(false);
    throw collective_error("ring epoch " + std::to_string(epoch_) + ": cannot send to " + next() +
                           " (down or queue full)");
  }
}

const std::string& ring_communicator::next() const { return members_[(rank_ + 1) % members_.size()]; }

const std::string& ring_communicator::prev() const {
  return members_[(rank_ + members_.size() - 1) % members_.size()];
}

void ring_communicator::all_reduce(std::span<float> data, reduce_op op) {
  const size_t n = members_.size();
  const uint64_t seq = ++seq_;
  if (same_host_ && n > 1 && !data.empty()) {
    same_host_all_reduce(*same_host_, data, {options_.timeout, [this] { return why_stop(); }});
  } else if (n > 1 && !data.empty()) {
    all_reduce_frames(seq, data);
  }
  if (op == reduce_op::mean) {
    const float inv = 1.0f / static_cast<float>(n);
    for (auto& v : data) v *= inv;
  }
}

void ring_communicator::all_reduce_frames(uint64_t seq, std::span<float> data) {
  const size_t n = members_.size();
  auto sends = std::make_shared<send_tracker>();
  polling_hold hold(hub_.node());
  try {
    // Global steps t = 0 .. 2(n-1)-1: t < n-1 reduce-scatter, then all-gather. The chunk
    // received at step t is the chunk sent at step t+1, segment by segment.
    const size_t steps = 2 * (n - 1);
    auto recv_chunk = [&](size_t t) { return (rank_ + 2 * n - t - 1) % n; };
    auto chunk_bytes = [&](size_t c) {
      const auto r = chunk_of(data.size(), n, c);
      return std::as_writable_bytes(data.subspan(r.offset, r.count));
    };
    const size_t max_chunk = chunk_of(data.size(), n, 0).count * sizeof(float);
    scratch_.resize(2 * ((max_chunk + sizeof(float) - 1) / sizeof(float)));
    auto scratch_bytes = [&](size_t t, size_t bytes) {
      auto* base = reinterpret_cast<std::byte*>(scratch_.data()) + (t % 2) * max_chunk;
      return std::span<std::byte>(base, bytes);
    };
    auto segments = [](size_t bytes) { return (bytes + segment_bytes - 1) / segment_bytes; };
    auto segment = [](std::span<std::byte> b, size_t i) {
      const size_t off = i * segment_bytes;
      return b.subspan(off, std::min(segment_bytes, b.size() - off));
    };
    auto post_expects = [&](size_t t) {
      auto target = chunk_bytes(recv_chunk(t));
      auto into = t < n - 1 ? scratch_bytes(t, target.size()) : target;
      for (size_t i = 0; i < segments(into.size()); ++i) {
        auto seg = segment(into, i);
        hub_.mailbox().expect({epoch_, seq, step_key(t, i)}, prev(), seg.data(), seg.size());
      }
    };
    const auto deadline = [&] { return std::chrono::steady_clock::now() + options_.timeout; };
    post_expects(0);
    {
      auto own = chunk_bytes(static_cast<size_t>(rank_));
      for (size_t i = 0; i < segments(own.size()); ++i) send_segment(seq, step_key(0, i), segment(own, i), sends->start());
    }
    for (size_t t = 0; t < steps; ++t) {
      if (t + 1 < steps) {
        // All-gather overwrites chunks that earlier steps sent: those sends must be done.
        if (t + 1 >= n - 1) wait_sends(hub_, {&next(), 1}, epoch_, *sends, options_.timeout);
        post_expects(t + 1);
      }
      auto target = chunk_bytes(recv_chunk(t));
      auto landed = t < n - 1 ? scratch_bytes(t, target.size()) : target;
      for (size_t i = 0; i < segments(target.size()); ++i) {
        hub_.mailbox().wait({epoch_, seq, step_key(t, i)}, prev(), deadline());
        auto seg = segment(target, i);
        if (t < n - 1) {
          add_into(reinterpret_cast<float*>(seg.data()), reinterpret_cast<const float*>(segment(landed, i).data()),
                   seg.size() / sizeof(float));
        }
        if (t + 1 < steps) send_segment(seq, step_key(t + 1, i), seg, sends->start());
      }
    }
    wait_sends(hub_, {&next(), 1}, epoch_, *sends, options_.timeout);
  } catch (const collective_error&) {
    settle(hub_, {&next(), 1}, epoch_, seq, *sends);
    throw;
  }
}

void ring_communicator::broadcast(std::span<std::byte> data, int root) {
  const size_t n = members_.size();
  const uint64_t seq = ++seq_;
  if (n < 2 || data.empty()) return;
  if (root < 0 || static_cast<size_t>(root) >= n) throw collective_error("broadcast: bad root");
  if (same_host_)
    return same_host_broadcast(*same_host_, data, root, {options_.timeout, [this] { return why_stop(); }});
  polling_hold hold(hub_.node());
  const size_t dist = (rank_ + n - root) % n;  // hops from the root
  const size_t count = (data.size() + segment_bytes - 1) / segment_bytes;
  auto segment = [&](size_t i) {
    const size_t off = i * segment_bytes;
    return data.subspan(off, std::min(segment_bytes, data.size() - off));
  };
  if (dist != 0)
    for (size_t i = 0; i < count; ++i)
      hub_.mailbox().expect({epoch_, seq, step_key(0, i)}, prev(), segment(i).data(), segment(i).size());
  auto sends = std::make_shared<send_tracker>();
  try {
    for (size_t i = 0; i < count; ++i) {
      if (dist != 0)
        hub_.mailbox().wait({epoch_, seq, step_key(0, i)}, prev(), std::chrono::steady_clock::now() + options_.timeout);
      if (dist + 1 < n) send_segment(seq, step_key(0, i), segment(i), sends->start());
    }
    wait_sends(hub_, {&next(), 1}, epoch_, *sends, options_.timeout);
  } catch (const collective_error&) {
    settle(hub_, {&next(), 1}, epoch_, seq, *sends);
    throw;
  }
}

}  // namespace msomni::transport
