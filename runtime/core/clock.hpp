// Time as an injected dependency: policy cores read `now()` from a clock they are given,
// never from the system. real_clock runs live; simulated_clock runs tests and the simulator.
#pragma once

#include "core/time_point.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

namespace msomni {

// Milliseconds since the Unix epoch (system_clock): the time stamps of records a person or
// another process reads (events.jsonl, control.json, summary.json). Never for durations.
int64_t unix_ms();

class clock {
 public:
  virtual ~clock() = default;
  virtual time_point now() const = 0;
};

// Monotonic wall time (steady_clock), measured from construction.
class real_clock final : public clock {
 public:
  real_clock();
  time_point now() const override;

 private:
  std::chrono::steady_clock::time_point start_;
};

// Discrete-event time: nothing moves until advance_to/advance/run_next. Timers fire in
// (time, insertion) order so a run is reproducible event for event.
class simulated_clock final : public clock {
 public:
  using callback = std::function<void()>;
  using timer_id = uint64_t;

  time_point now() const override { return now_; }

  timer_id schedule_at(time_point at, callback fn);
  timer_id schedule_after(nanos delay, callback fn) { return schedule_at(now_ + delay, std::move(fn)); }
  bool cancel(timer_id id);

  // Fires the earliest pending timer (moving time to it); false when none is pending.
  bool run_next();
  // Fires every timer due up to `t`, then sets now to `t`. Returns timers fired.
  size_t advance_to(time_point t);
  size_t advance(nanos d) { return advance_to(now_ + d); }

  size_t pending() const noexcept { return timers_.size(); }
  uint64_t fired() const noexcept { return fired_; }

 private:
  time_point now_{};
  timer_id next_id_ = 1;
  uint64_t fired_ = 0;
  std::map<std::pair<time_point, timer_id>, callback> timers_;
};

}  // namespace msomni
