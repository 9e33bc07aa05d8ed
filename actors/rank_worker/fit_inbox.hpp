// Memory fit requests (msg::memory_fit) on their way from the rank's "worker" actor to the
// training loop, which looks for its step's request when the step starts. One request per
// step: a replayed one (an earlier attempt's decision) is never replaced by a live one; a
// live one by a newer live one. Bounded: at most `capacity` steps are held; when full, the
// farthest step goes (counted). A request for a step the loop has passed is discarded (stale)
// at the next step; one may arrive before a rollback that runs its step again, so none is
// refused on arrival.
#pragma once

#include "messages/scheduling_messages.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace msomni::rank_worker {

class fit_inbox {
 public:
  explicit fit_inbox(size_t capacity = 1024) : capacity_(capacity) {}

  struct counts {
    uint64_t received = 0, dropped = 0, stale = 0, taken = 0, superseded = 0;
  };

  void push(msg::memory_fit f) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_.received;
    auto it = fits_.find(f.step);
    if (it != fits_.end() && it->second.replay && !f.replay) {  // the replay decides
      ++counts_.superseded;
      return;
    }
    fits_[f.step] = std::move(f);
    while (fits_.size() > capacity_) {
      fits_.erase(std::prev(fits_.end()));
      ++counts_.dropped;
    }
  }

  // The request for `step` when there is one for this slot (rank `rank` of `world`); every
  // request up to `step` is discarded (one of another slot counts as stale).
  std::optional<msg::memory_fit> take(uint64_t step, uint32_t rank, uint32_t world) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<msg::memory_fit> out;
    for (auto it = fits_.begin(); it != fits_.end() && it->first <= step;) {
      if (it->first == step && it->second.rank == rank && it->second.world_size == world) {
        out = std::move(it->second);
        ++counts_.taken;
      } else {
        ++counts_.stale;
      }
      it = fits_.erase(it);
    }
    return out;
  }

  counts totals() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, msg::memory_fit> fits_;
  counts counts_;
  size_t capacity_;
};

}  // namespace msomni::rank_worker
