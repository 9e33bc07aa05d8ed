// When a peer that is up counts as silent (and so down), when it is owed a keep-alive, when
// an accepted connection's hello is overdue, and how long the progress loop may sleep
// between checks. A pure rule: every time comes in as an argument; it has no clock, thread
// or socket of its own.
//
//   up --a frame heard--> up (silence starts again)
//   up --nothing sent to it for keepalive_interval--> keep-alive due (any frame sent resets it)
//   up --nothing heard for more than keepalive_interval x keepalive_misses--> silent: down
//   accepted --not up within hello_timeout of its creation--> overdue: refused
//   this node stood still --> its peers' silence in that time does not count
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace msomni::transport {

using liveness_time = std::chrono::steady_clock::time_point;

struct liveness_rule {
  std::chrono::milliseconds keepalive_interval{250};
  int keepalive_misses = 6;
  std::chrono::milliseconds hello_timeout{10000};

  // Silence longer than this is a missed keep-alive too many.
  std::chrono::milliseconds silent_limit() const { return keepalive_interval * keepalive_misses; }
  // The longest the progress loop may sleep with nothing to do: half an interval (at least
  // 1 ms), so that a keep-alive goes out at most half an interval late.
  int idle_wait_ms() const;
  // What a silent peer is reported down with, and an overdue hello refused with.
  std::string silent_reason() const;
  std::string hello_overdue_reason() const;
};

// When an endpoint was created, and when a frame was last heard from and sent to its peer;
// last_frame is when one really came, which this node's own pauses do not move.
struct peer_liveness {
  liveness_time created{}, last_heard{}, last_sent{}, last_frame{};
};

enum class liveness_due : uint8_t {
  nothing,    // heard and spoken to recently enough
  keepalive,  // send it a keep-alive now
  silent,     // it missed keepalive_misses keep-alives: it is down
};

// What a peer that is up is owed at `now`. Silence wins over a due keep-alive.
liveness_due liveness_check(const liveness_rule& rule, const peer_liveness& peer, liveness_time now);
// Whether an accepted connection that is not up yet has had its time for the hello.
bool hello_overdue(const liveness_rule& rule, const peer_liveness& peer, liveness_time now);

// This node's own pause: the checks normally come at most half an interval apart, so a gap
// since `last_check` longer than an interval is this process standing still (stopped,
// starved of the CPU). The silence of a peer in that time is not the peer's: returns when it
// counts as last heard, moved on by the pause (never past `now`).
bool own_pause(const liveness_rule& rule, liveness_time last_check, liveness_time now);
liveness_time excuse_own_pause(const liveness_rule& rule, liveness_time last_heard, liveness_time last_check,
                               liveness_time now);

// A second connection that proves the name of a peer that is up supersedes the first once no
// frame came on the first for a keep-alive interval (the peer lost it and connected again, say
// after this node stood still); until then the first stays, for the order of frames.
bool supersedes_quiet(const liveness_rule& rule, const peer_liveness& first, liveness_time now);

}  // namespace msomni::transport
