// The UCX node's peer liveness rule on a hand-driven time line: when a peer that is up is
// owed a keep-alive, when its silence makes it down, when an accepted connection's hello is
// overdue, and that a node checking at its own sleep cadence keeps a talking peer up and
// finds a quiet one down within one sleep past the limit.
#include "ucx/peer_liveness.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace msomni::transport;
using namespace std::chrono_literals;

namespace {
const liveness_time t0{};  // an arbitrary origin: the rule only compares differences

liveness_rule rule_of(std::chrono::milliseconds interval, int misses, std::chrono::milliseconds hello = 10000ms) {
  liveness_rule r;
  r.keepalive_interval = interval;
  r.keepalive_misses = misses;
  r.hello_timeout = hello;
  return r;
}

peer_liveness heard_and_sent(liveness_time heard, liveness_time sent) {
  peer_liveness p;
  p.created = t0;
  p.last_heard = heard;
  p.last_sent = sent;
  return p;
}
}  // namespace

TEST_CASE("a peer is silent only once more than interval x misses has passed since it was heard") {
  const auto rule = rule_of(250ms, 6);
  CHECK(rule.silent_limit() == 1500ms);
  // Spoken to just now, so only silence can be due.
  CHECK(liveness_check(rule, heard_and_sent(t0, t0 + 1500ms), t0 + 1500ms) == liveness_due::nothing);
  CHECK(liveness_check(rule, heard_and_sent(t0, t0 + 1500ms), t0 + 1500ms + 1ns) == liveness_due::silent);
  CHECK(rule.silent_reason() == "silent for 1500 ms (missed keep-alives)");
}

TEST_CASE("our own keep-alives do not keep a silent peer up") {
  // A node that keeps sending but never hears back must still find the peer down: what it
  // sent says nothing about the peer.
  const auto rule = rule_of(100ms, 3);
  const auto now = t0 + 301ms;
  CHECK(liveness_check(rule, heard_and_sent(t0, now), now) == liveness_due::silent);
  // Silence wins over a keep-alive that is also due.
  CHECK(liveness_check(rule, heard_and_sent(t0, t0), now) == liveness_due::silent);
}

TEST_CASE("a keep-alive is due once a whole interval passed without a frame sent") {
  const auto rule = rule_of(250ms, 6);
  const auto heard = t0 + 1000ms;  // heard recently: never silent below
  CHECK(liveness_check(rule, heard_and_sent(heard, t0 + 1000ms), t0 + 1249ms) == liveness_due::nothing);
  CHECK(liveness_check(rule, heard_and_sent(heard, t0 + 1000ms), t0 + 1250ms) == liveness_due::keepalive);
  // Hearing from the peer does not stand in for speaking to it: it needs our frames too.
  CHECK(liveness_check(rule, heard_and_sent(t0 + 1300ms, t0 + 1000ms), t0 + 1300ms) == liveness_due::keepalive);
}

TEST_CASE("an accepted connection's hello is overdue strictly after hello_timeout") {
  const auto rule = rule_of(250ms, 6, 2000ms);
  peer_liveness p;
  p.created = t0 + 5s;
  CHECK_FALSE(hello_overdue(rule, p, t0 + 7s));
  CHECK(hello_overdue(rule, p, t0 + 7s + 1ns));
  CHECK(rule.hello_overdue_reason() == "no hello within 2000 ms");
}

TEST_CASE("the progress loop sleeps half an interval, at least 1 ms") {
  CHECK(rule_of(250ms, 6).idle_wait_ms() == 125);
  CHECK(rule_of(3ms, 6).idle_wait_ms() == 1);
  CHECK(rule_of(1ms, 6).idle_wait_ms() == 1);
  CHECK(rule_of(0ms, 6).idle_wait_ms() == 1);
}

TEST_CASE("checked at the loop's cadence, a talking peer stays up and a quiet one goes down in time") {
  // Two nodes with the same rule, each checking whenever its loop wakes (every idle_wait_ms)
  // and sending a keep-alive when one is due; a keep-alive sent is heard by the other side
  // at once. At `quiet_at` node B stops sending anything.
  const auto rule = rule_of(250ms, 6);
  const auto step = std::chrono::milliseconds(rule.idle_wait_ms());
  const auto quiet_at = t0 + 20s;
  peer_liveness a_sees_b = heard_and_sent(t0, t0), b_sees_a = heard_and_sent(t0, t0);
  int a_keepalives = 0;
  liveness_time down_at{};
  for (auto now = t0; now < t0 + 30s && down_at == liveness_time{}; now += step) {
    switch (liveness_check(rule, a_sees_b, now)) {
      case liveness_due::silent: down_at = now; break;
      case liveness_due::keepalive:
        a_sees_b.last_sent = now, b_sees_a.last_heard = now, ++a_keepalives;
        break;
      case liveness_due::nothing: break;
    }
    if (now < quiet_at && liveness_check(rule, b_sees_a, now) == liveness_due::keepalive)
      b_sees_a.last_sent = now, a_sees_b.last_heard = now;
  }
  REQUIRE(down_at != liveness_time{});
  const auto last_heard = a_sees_b.last_heard;
  CHECK(last_heard > quiet_at - rule.keepalive_interval - step);  // B talked until it went quiet
  CHECK(down_at > quiet_at);                                      // never down while it talked
  CHECK(down_at - last_heard > rule.silent_limit());              // down only past the limit,
  CHECK(down_at - last_heard <= rule.silent_limit() + step);      // and within one sleep of it
  // One keep-alive per interval, not one per wake-up, over the whole run.
  const auto intervals = (down_at - t0) / rule.keepalive_interval;
  CHECK(a_keepalives >= intervals - 1);
  CHECK(a_keepalives <= intervals);
}

TEST_CASE("this node's own pause is not its peers' silence, and only then") {
  liveness_rule rule;
  rule.keepalive_interval = 100ms;
  rule.keepalive_misses = 5;
  const liveness_time t0{std::chrono::seconds(10)};
  // Checked 50 ms apart: no pause, nothing moves.
  CHECK_FALSE(own_pause(rule, t0, t0 + 50ms));
  CHECK(excuse_own_pause(rule, t0 - 400ms, t0, t0 + 50ms) == t0 - 400ms);
  // Stood still 10 s: the peer last heard 400 ms before is 400 ms + half an interval behind.
  const auto now = t0 + 10s;
  REQUIRE(own_pause(rule, t0, now));
  const auto heard = excuse_own_pause(rule, t0 - 400ms, t0, now);
  CHECK(heard == now - 450ms);
  peer_liveness p{t0 - 1s, heard, now, t0 - 400ms};
  CHECK(liveness_check(rule, p, now) != liveness_due::silent);
  // Never past now; and the first check (no earlier one) is no pause.
  CHECK(excuse_own_pause(rule, now, t0, now) == now);
  CHECK_FALSE(own_pause(rule, liveness_time{}, now));
}

TEST_CASE("a peer's second connection supersedes the first only once no frame came on the first for an interval") {
  liveness_rule rule;
  rule.keepalive_interval = 100ms;
  const liveness_time t0{std::chrono::seconds(10)};
  peer_liveness first{t0, t0, t0, t0};
  CHECK_FALSE(supersedes_quiet(rule, first, t0 + 50ms));
  CHECK(supersedes_quiet(rule, first, t0 + 150ms));
  // An excused last_heard does not count: only a real frame does.
  first.last_heard = t0 + 140ms;
  CHECK(supersedes_quiet(rule, first, t0 + 150ms));
}
