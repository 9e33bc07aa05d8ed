// leader_follow (see leader_follow.hpp).
#include "core/leader_follow.hpp"

namespace msomni {

void leader_follow::lost(const leader_named& served, time_point now, nanos limit) {
  served_ = served;
  lost_at_ = now;
  limit_ = limit;
  tried_.clear();
  tried_at_.reset();
}

bool leader_follow::try_now(const std::optional<leader_named>& named, bool lost_node_up, time_point now) {
  if (!named || named->address.empty()) return false;
  if (s_.only_another) {
    const bool another = named->address != served_.address || (named->pid != 0 && named->pid != served_.pid);
    if (!another || lost_node_up) return false;
  }
  const auto key = named->address + "/" + std::to_string(named->pid);
  if (key == tried_ && tried_at_ && now - *tried_at_ < s_.retry_interval) return false;
  tried_ = key;
  tried_at_ = now;
  return true;
}

void leader_follow::joined(const leader_named& l) {
  served_ = l;
  lost_at_.reset();
}

}  // namespace msomni
