// control_link (see control_link.hpp).
#include "control_link.hpp"

namespace msomni::apps {

void control_link::attach(msg::orchestrator_actor orchestrator) {
  std::lock_guard<std::mutex> lock(mutex_);
  orchestrator_ = std::move(orchestrator);
}

void control_link::lose() {
  std::lock_guard<std::mutex> lock(mutex_);
  orchestrator_ = msg::orchestrator_actor{};
}

bool control_link::live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<bool>(orchestrator_);
}

msg::orchestrator_actor control_link::orchestrator() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return orchestrator_;
}

void control_link::send_record(const msg::step_record& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool live = static_cast<bool>(orchestrator_);
  if (live) caf::anon_send(orchestrator_, r);
  history_.push_back(r);
  sent_.push_back(live);
  while (history_.size() > history_max_) {
    if (!sent_.front()) ++overflowed_;
    history_.pop_front();
    sent_.pop_front();
  }
}

void control_link::send_checkpoint(const msg::checkpoint_done& d) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (orchestrator_) {
    caf::anon_send(orchestrator_, d);
    return;
  }
  held_checkpoints_.push_back(d);
  if (held_checkpoints_.size() > checkpoints_held_max_) {
    held_checkpoints_.pop_front();
    ++overflowed_;
  }
}

size_t control_link::adopt(msg::orchestrator_actor orchestrator, uint64_t recorded_step) {
  std::lock_guard<std::mutex> lock(mutex_);
  orchestrator_ = std::move(orchestrator);
  size_t n = 0;
  for (size_t i = 0; i < history_.size(); ++i) {
    if (history_[i].step <= recorded_step) continue;
    caf::anon_send(orchestrator_, history_[i]);
    sent_[i] = true;
    ++n;
  }
  for (auto& d : held_checkpoints_) caf::anon_send(orchestrator_, std::move(d)), ++n;
  held_checkpoints_.clear();
  resent_ += n;
  return n;
}

void control_link::put_answer(msg::rejoin_answer a) {
  std::lock_guard<std::mutex> lock(mutex_);
  answer_ = std::move(a);
}

std::optional<msg::rejoin_answer> control_link::take_answer() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(answer_, std::nullopt);
}

control_link::counts control_link::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {history_.size(), overflowed_, dropped_, resent_};
}

}  // namespace msomni::apps
