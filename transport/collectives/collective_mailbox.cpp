// collective_mailbox (see collective_mailbox.hpp).
#include "collectives/collective_mailbox.hpp"

#include "collectives/communicator.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>

namespace msomni::transport {

chunk_range chunk_of(size_t n, size_t parts, size_t i) {
  const size_t base = n / parts, extra = n % parts;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

namespace {
constexpr size_t max_withdrawn_ops = 1024;
}

void collective_mailbox::erase_slot(slot_map::iterator it) {
  staged_bytes_ -= it->second.staged.size();
  slots_.erase(it);
}

bool collective_mailbox::is_withdrawn(uint64_t epoch, uint64_t seq) const {
  return withdrawn_ops_.count({epoch, seq}) > 0;
}

std::byte* collective_mailbox::buffer_for(const std::string& peer, const frame_header& h) {
  std::lock_guard<std::mutex> lock(mutex_);
  const chunk_key key{h.a, h.b, h.c};
  if (key.epoch < min_epoch_ || is_withdrawn(key.epoch, key.seq)) {
    ++dropped_;
    return nullptr;
  }
  auto& s = slots_[key];
  if (s.landing || s.arrived || !s.staged.empty()) {  // a duplicate of a chunk already here
    ++dropped_;
    return nullptr;
  }
  if (s.dest) {
    if (s.bytes != h.payload_size || s.peer != peer) {
      ++dropped_;
      return nullptr;
    }
    s.landing = true;
    return s.dest;
  }
  if (staged_bytes_ + h.payload_size > max_staged_bytes_) {
    ++dropped_;
    s.failed = true;  // the waiting collective fails loudly rather than hangs
    cv_.notify_all();
    return nullptr;
  }
  s.peer = peer;
  s.staged.resize(h.payload_size);
  staged_bytes_ += h.payload_size;
  s.landing = true;
  return s.staged.data();
}

void collective_mailbox::on_done(const std::string&, const frame_header& h, std::byte*, bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = slots_.find({h.a, h.b, h.c});
  if (it == slots_.end()) return;
  it->second.landing = false;
  if (it->second.withdrawn) {
    erase_slot(it);
  } else {
    it->second.arrived = ok;
    it->second.failed = !ok;
  }
  cv_.notify_all();
}

void collective_mailbox::on_peer_down(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  down_.insert(peer);
  cv_.notify_all();
}

void collective_mailbox::on_peer_up(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  down_.erase(peer);
}

void collective_mailbox::expect(const chunk_key& key, const std::string& peer, std::byte* dest,
                                size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& s = slots_[key];
  s.peer = peer;
  s.bytes = bytes;
  s.want = dest;
  if (!s.staged.empty() || s.arrived) return;  // it came first; wait() copies it
  s.dest = dest;
}

void collective_mailbox::wait(const chunk_key& key, const std::string& peer,
                              std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto& s = slots_[key];
  const auto ready = [&] { return s.arrived || s.failed || down_.count(peer) > 0 || key.epoch < aborted_below_; };
  // A segment of a running collective usually lands within microseconds: look again,
  // yielding the core, for a bounded time before sleeping on the condition variable (whose
  // wake-up costs tens of microseconds on few cores).
  const auto spin_until = std::min(deadline, std::chrono::steady_clock::now() + wait_spin);
  while (!ready() && std::chrono::steady_clock::now() < spin_until) {
    lock.unlock();
    ::sched_yield();
    lock.lock();
  }
  const bool ok = cv_.wait_until(lock, deadline, ready);
  auto fail = [&](const std::string& why) {
    // A chunk still landing keeps its slot until on_done(); withdraw() waits for it.
    auto it = slots_.find(key);
    if (it->second.landing) it->second.withdrawn = true;
    else erase_slot(it);
    throw collective_error("collective epoch " + std::to_string(key.epoch) + " op " +
                           std::to_string(key.seq) + " step " + std::to_string(key.step) + ": " + why);
  };
  if (!s.arrived) {
    if (down_.count(peer)) fail("peer " + peer + " is down");
    if (key.epoch < aborted_below_) fail("superseded: " + abort_reason_);
    if (s.failed) fail("chunk from " + peer + " failed (transfer error or staging pool full)");
    if (!ok) fail("timed out waiting for " + peer);
  }
  if (!s.staged.empty()) {
    // The chunk arrived before expect(): copy it to where the collective wanted it.
    if (s.staged.size() != s.bytes) fail("chunk from " + peer + " has the wrong size");
    std::memcpy(s.want, s.staged.data(), s.bytes);
  }
  erase_slot(slots_.find(key));
}

bool collective_mailbox::withdraw(uint64_t epoch, uint64_t seq, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  withdrawn_ops_.insert({epoch, seq});
  if (withdrawn_ops_.size() > max_withdrawn_ops) withdrawn_ops_.erase(withdrawn_ops_.begin());
  const chunk_key first{epoch, seq, 0};
  auto op_slots = [&] {
    auto end = slots_.lower_bound({epoch, seq + 1, 0});
    return std::pair{slots_.lower_bound(first), end};
  };
  for (auto [it, end] = op_slots(); it != end;) {
    auto next = std::next(it);
    if (it->second.landing) it->second.withdrawn = true;
    else erase_slot(it);
    it = next;
  }
  const bool settled = cv_.wait_until(lock, deadline, [&] {
    auto [it, end] = op_slots();
    return it == end;
  });
  // Past the deadline: forget them; a late on_done() then finds no slot.
  for (auto [it, end] = op_slots(); it != end;) erase_slot(it++);
  return settled;
}

void collective_mailbox::retire_below(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  min_epoch_ = std::max(min_epoch_, epoch);
  withdrawn_ops_.erase(withdrawn_ops_.begin(), withdrawn_ops_.lower_bound({epoch, 0}));
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (it->first.epoch >= epoch) {
      ++it;
    } else if (it->second.landing) {
      (it++)->second.withdrawn = true;  // erased by its on_done()
    } else {
      erase_slot(it++);
    }
  }
}

void collective_mailbox::abort_below(uint64_t epoch, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (epoch <= aborted_below_) return;
    aborted_below_ = epoch;
    abort_reason_ = why;
  }
  cv_.notify_all();
}

bool collective_mailbox::is_down(const std::string& peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return down_.count(peer) > 0;
}

bool collective_mailbox::superseded(uint64_t epoch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch < aborted_below_;
}

size_t collective_mailbox::staged_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return staged_bytes_;
}

uint64_t collective_mailbox::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

}  // namespace msomni::transport
