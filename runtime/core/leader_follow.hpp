// Following a job's next leader (a [control] store) once the control process served is gone:
// the decision both msomni-rank and msomni-agent make on each look at control.json. Pure: the
// caller reads the file, looks at its transport and passes the time; this says whether to
// connect to the leader the file names now, or to wait (and whether the follow limit ran out).
#pragma once

#include "core/time_point.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace msomni {

// How long a named leader's node has to answer a connect, and how soon the same leader
// (address and pid) is tried again while it does not.
constexpr auto leader_connect_wait = std::chrono::seconds(2);
constexpr auto leader_retry_interval = std::chrono::seconds(5);

// The leader control.json names (it is replaced whole by each leader).
struct leader_named {
  std::string address;
  int64_t pid = 0;  // 0: not known
};

class leader_follow {
 public:
  struct settings {
    // Only a leader other than the one lost is followed (the agent: it joined that one's node
    // and must join the next one's); otherwise whatever the file names is asked (the rank).
    bool only_another = false;
    nanos retry_interval = std::chrono::duration_cast<nanos>(leader_retry_interval);
  };
  explicit leader_follow(settings s) : s_(s) {}

  // The leader served (address, pid) is gone at `now`; following gives up after `limit`.
  void lost(const leader_named& served, time_point now, nanos limit);
  // Whether a leader is being followed (lost and not joined again).
  bool following() const { return lost_at_.has_value(); }
  // Whether the follow limit ran out (false while not following).
  bool past_limit(time_point now) const { return lost_at_ && now - *lost_at_ > limit_; }
  nanos limit() const { return limit_; }
  const leader_named& served() const { return served_; }

  // A look at control.json: `named` what it names (nullopt: unreadable or no leader yet),
  // `lost_node_up` whether the lost leader's node is still connected (its orchestrator ended
  // first: with only_another, a next leader starts only once it is gone too). True: connect
  // to `named` and ask it now (it counts as tried); false: wait.
  bool try_now(const std::optional<leader_named>& named, bool lost_node_up, time_point now);

  // The leader `l` answered: it is served from now on, following ends.
  void joined(const leader_named& l);

 private:
  settings s_;
  leader_named served_;
  std::optional<time_point> lost_at_;
  nanos limit_{0};
  std::string tried_;  // "address/pid" of the leader tried last
  std::optional<time_point> tried_at_;
};

}  // namespace msomni
