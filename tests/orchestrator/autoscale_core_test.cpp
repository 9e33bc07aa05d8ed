// Utilisation-driven scaling as a pure core: a busy share held above the threshold for the
// sustain window adds a replica, held below removes one, a full cluster is one refusal per
// episode, and a resize starts a cooldown and new windows.
#include "autoscale_core.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::orchestrator;
using namespace std::chrono_literals;

namespace {

autoscale_settings fast() {
  autoscale_settings s;
  s.enabled = true;
  s.up_utilization = 0.9;
  s.up_sustain = 10s;
  s.down_utilization = 0.5;
  s.down_sustain = 20s;
  s.cooldown = 30s;
  return s;
}

// Feeds one sample a second from `from` (seconds) to `to`; returns the first decision with
// a reason, and the second it came at.
std::pair<autoscale_decision, int> feed(autoscale_core& c, double busy, int from, int to, int64_t world, bool grow = true,
                                        bool shrink = true) {
  for (int t = from; t <= to; ++t) {
    auto d = c.on_step(busy, time_point{std::chrono::seconds(t)}, world, grow, shrink);
    if (!d.reason.empty()) return {d, t};
  }
  return {{}, -1};
}

}  // namespace

TEST_CASE("the busy share is the step less its data wait and checkpoint stall") {
  CHECK(busy_share(100, 10, 5) == doctest::Approx(0.85));
  CHECK(busy_share(100, 200, 0) == 0);
  CHECK(busy_share(0, 0, 0) == 0);
}

TEST_CASE("busy for the whole up window adds one replica, idle for the down window removes one") {
  autoscale_core c(fast());
  const auto [up, at] = feed(c, 0.97, 0, 60, 2);
  CHECK(up.delta == 1);
  CHECK(at == 10);
  CHECK(up.reason.find("busy 97% of the step over the last 10 s (above 90%): one more replica, 3 in all") != std::string::npos);
  c.on_resized(time_point{10s});
  // Cooldown: nothing until 40 s, then the down window must fill (20 s) again.
  const auto [down, when] = feed(c, 0.2, 11, 100, 3);
  CHECK(down.delta == -1);
  CHECK(when == 60);
  CHECK(down.reason.find("below 50%") != std::string::npos);
}

TEST_CASE("a short burst does not scale, and neither does a mean between the thresholds") {
  autoscale_core c(fast());
  for (int t = 0; t < 100; ++t) {
    const double busy = (t % 20 < 5) ? 0.99 : 0.7;  // bursts of 5 s, mean well below 90%
    CHECK(c.on_step(busy, time_point{std::chrono::seconds(t)}, 2, true, true).delta == 0);
  }
}

TEST_CASE("no free slot is one refusal per episode, and min_replicas stops a shrink") {
  autoscale_core c(fast());
  const auto [refused, at] = feed(c, 0.99, 0, 30, 2, false);
  CHECK(refused.delta == 0);
  CHECK(refused.reason.find("no free slot or max_replicas reached: staying at 2") != std::string::npos);
  CHECK(feed(c, 0.99, at + 1, 60, 2, false).second == -1);  // said once
  autoscale_core idle(fast());
  CHECK(feed(idle, 0.1, 0, 100, 1, true, false).second == -1);
}

TEST_CASE("disabled, it never decides") {
  auto s = fast();
  s.enabled = false;
  autoscale_core c(s);
  CHECK(feed(c, 1.0, 0, 100, 1).second == -1);
  CHECK(c.samples() == 0);
}
