// real_clock and simulated_clock (see clock.hpp).
#include "core/clock.hpp"

namespace msomni {

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

real_clock::real_clock() : start_(std::chrono::steady_clock::now()) {}

time_point real_clock::now() const {
  return time_point{std::chrono::duration_cast<nanos>(std::chrono::steady_clock::now() - start_)};
}

simulated_clock::timer_id simulated_clock::schedule_at(time_point at, callback fn) {
  if (at < now_) at = now_;  // the past is now: a late timer fires next, never backwards
  const auto id = next_id_++;
  timers_.emplace(std::pair{at, id}, std::move(fn));
  return id;
}

bool simulated_clock::cancel(timer_id id) {
  for (auto it = timers_.begin(); it != timers_.end(); ++it)
    if (it->first.second == id) {
      timers_.erase(it);
      return true;
    }
  return false;
}

bool simulated_clock::run_next() {
  if (timers_.empty()) return false;
  auto node = timers_.extract(timers_.begin());
  now_ = node.key().first;
  ++fired_;
  node.mapped()();
  return true;
}

size_t simulated_clock::advance_to(time_point t) {
  size_t n = 0;
  while (!timers_.empty() && timers_.begin()->first.first <= t) {
    run_next();
    ++n;
  }
  if (t > now_) now_ = t;
  return n;
}

}  // namespace msomni
