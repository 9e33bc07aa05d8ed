// What the tensor stage actor hands the training thread, which is not an actor: packed
// batches, and the bad-data counts as the stage has them (read on every training step, so a
// copy published when they change instead of a request to the actor). The batches go through
// a bounded queue the actor pushes into without ever blocking, and the consumer pops from,
// waiting only when nothing is packed. A batch that is ready costs the consumer a lock, not
// a request to the actor and its reply (two thread wake-ups per micro-batch before). Each
// entry carries the pipeline position after it, so the consumer knows the position of what
// it consumed without asking. The capacity is the tensor core's ready-batch bound: a push
// beyond it is a bug in that bound and throws.
#pragma once

#include "flow_cores.hpp"
#include "micro_batch.hpp"
#include "model/micro_batch.hpp"
#include "sample.hpp"

#include <condition_variable>
#include <deque>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

namespace msomni::data {

struct handed_batch {
  // The memory `packed` was allocated from, first so that it is released last: a batch still
  // queued when the stages end (the hand-off's last holder may be the tensor stage's state,
  // torn down with the actor system) gives its buffers back to a live resource.
  std::shared_ptr<std::pmr::memory_resource> memory;
  std::shared_ptr<micro_batch> batch;
  pipeline_position after;
  std::optional<model::micro_batch> packed;  // the model's batch, when the stage packs one
};

class batch_handoff {
 public:
  explicit batch_handoff(size_t capacity) : capacity_(capacity) {}

  void push(handed_batch b) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (ready_.size() >= capacity_)
        throw std::logic_error("batch hand-off: more than " + std::to_string(capacity_) + " packed batches waiting");
      ready_.push_back(std::move(b));
    }
    changed_.notify_one();
  }
  // The first failure stands; the consumer gets it once the batches before it are taken.
  void fail(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failure_.empty()) failure_ = why;
    }
    changed_.notify_one();
  }
  // The next batch, waiting while none is packed; throws std::runtime_error with the
  // pipeline's failure when there is one and nothing is left before it.
  handed_batch pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !ready_.empty() || !failure_.empty(); });
    if (ready_.empty()) throw std::runtime_error("data pipeline failed: " + failure_);
    handed_batch b = std::move(ready_.front());
    ready_.pop_front();
    return b;
  }
  // Applies `visit` to the model batches packed and waiting, oldest first, at most `max`, under
  // the queue's lock (so keep it cheap): what the consumer takes next.
  template <class Visit>
  void visit_waiting(size_t max, Visit&& visit) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < ready_.size() && i < max; ++i)
      if (ready_[i].packed) visit(*ready_[i].packed);
  }
  size_t waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ready_.size();
  }
  void publish_bad(const bad_data_counts& bad) {
    std::lock_guard<std::mutex> lock(mutex_);
    bad_ = bad;
  }
  bad_data_counts bad() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bad_;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<handed_batch> ready_;
  std::string failure_;
  bad_data_counts bad_;
};

}  // namespace msomni::data
