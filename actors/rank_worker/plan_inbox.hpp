// Membership plans (join_world) on their way from the rank's "worker" actor to the training
// loop, which only looks between optimizer steps. Only the newest plan matters, so the inbox
// holds at most one per epoch and at most `capacity` (older ones are dropped and counted).
#pragma once

#include "messages/control_messages.hpp"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

namespace msomni::rank_worker {

class plan_inbox {
 public:
  explicit plan_inbox(size_t capacity = 8) : capacity_(capacity) {}

  void push(msg::join_world p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (p.epoch <= taken_) return;  // stale or repeated
    plans_[p.epoch] = std::move(p);
    while (plans_.size() > capacity_) plans_.erase(plans_.begin()), ++dropped_;
    cv_.notify_all();
  }

  uint64_t newest_epoch() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.empty() ? taken_ : plans_.rbegin()->first;
  }

  // The newest plan with epoch >= `at_least` (older ones are discarded), waiting up to `timeout`.
  std::optional<msg::join_world> take(uint64_t at_least, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool got = cv_.wait_for(lock, timeout, [&] { return !plans_.empty() && plans_.rbegin()->first >= at_least; });
    if (!got) return std::nullopt;
    auto p = std::move(plans_.rbegin()->second);
    taken_ = p.epoch;
    plans_.clear();
    return p;
  }

  // Exactly epoch `epoch` (the one announced at a barrier), waiting up to `timeout`.
  std::optional<msg::join_world> take_exactly(uint64_t epoch, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool got = cv_.wait_for(lock, timeout, [&] { return plans_.count(epoch) > 0; });
    if (!got) return std::nullopt;
    auto p = std::move(plans_[epoch]);
    taken_ = epoch;
    plans_.erase(plans_.begin(), plans_.upper_bound(epoch));
    return p;
  }

  uint64_t dropped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dropped_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, msg::join_world> plans_;
  uint64_t taken_ = 0;
  uint64_t dropped_ = 0;
  size_t capacity_;
};

}  // namespace msomni::rank_worker
