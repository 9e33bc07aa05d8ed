// msomni's time as plain values: a duration in nanoseconds and a point on an arbitrary epoch.
// Pure cores take time in these types; the clocks that produce them are in core/clock.hpp.
#pragma once

#include <chrono>

namespace msomni {

using nanos = std::chrono::nanoseconds;
// Time since an arbitrary epoch (the clock's start for real_clock, 0 for simulated_clock).
using time_point = std::chrono::time_point<struct msomni_clock_tag, nanos>;

}  // namespace msomni
