// The simulated clock: ordered timers, cancellation, and hours of time in milliseconds.
#include "core/clock.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <vector>

using namespace std::chrono_literals;
using msomni::nanos;
using msomni::simulated_clock;
using msomni::time_point;

TEST_CASE("simulated timers fire in time order, ties in insertion order") {
  simulated_clock clk;
  std::vector<int> order;
  clk.schedule_after(5s, [&] { order.push_back(3); });
  clk.schedule_after(1s, [&] { order.push_back(1); });
  clk.schedule_after(5s, [&] { order.push_back(4); });
  clk.schedule_after(2s, [&] { order.push_back(2); });
  CHECK(clk.advance(3s) == 2);
  CHECK(clk.now() == time_point{3s});
  CHECK(clk.advance(10s) == 2);
  CHECK(order == std::vector<int>{1, 2, 3, 4});
  CHECK(clk.now() == time_point{13s});
}

TEST_CASE("cancelled timers never fire and past deadlines fire at now") {
  simulated_clock clk;
  bool fired = false;
  auto id = clk.schedule_after(1s, [&] { fired = true; });
  CHECK(clk.cancel(id));
  CHECK_FALSE(clk.cancel(id));
  clk.advance(2s);
  CHECK_FALSE(fired);
  time_point seen{};
  clk.schedule_at(time_point{0s}, [&] { seen = clk.now(); });
  CHECK(clk.run_next());
  CHECK(seen == time_point{2s});
}

TEST_CASE("six simulated hours of 10 s heartbeats run in milliseconds of real time") {
  simulated_clock clk;
  uint64_t beats = 0;
  std::function<void()> beat = [&] {
    ++beats;
    clk.schedule_after(10s, beat);
  };
  clk.schedule_after(10s, beat);
  const auto start = std::chrono::steady_clock::now();
  clk.advance(6h);
  const auto real = std::chrono::steady_clock::now() - start;
  CHECK(beats == 6 * 3600 / 10);
  CHECK(clk.now() == time_point{6h});
  CHECK(clk.pending() == 1);
  MESSAGE("6 h simulated in " << std::chrono::duration<double, std::milli>(real).count()
                              << " ms real time");
}

TEST_CASE("real clock is monotonic") {
  msomni::real_clock clk;
  const auto a = clk.now();
  const auto b = clk.now();
  CHECK(b >= a);
}
