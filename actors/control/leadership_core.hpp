// The rule of control leadership over a store lease: when a control process may act as the
// job's leader, when it must renew, and when it must step down. Pure (the time is given).
//
//   standby --elected(sent_at, ttl)--> leading --renewed(sent_at, ttl left)--> leading
//                                         |  renewal missing until step_down_at, the store
//                                         |  says the lease is gone, or a fenced commit
//                                         v  is refused
//                                      deposed (final for this process; when the lease
//                                      only ran out, msomni-run stands again as a new one)
//
// Safety: etcd starts a lease's time when it receives the grant or renewal, which is after
// this process sent it, so `sent_at + ttl` is never later than the store's own expiry. The
// leader stops committing `margin` before that. Independently, every commit compares the
// leader key's create revision (the term), so a deposed leader that did not notice (a process
// stopped past its lease) cannot commit anything either: the store refuses it.
#pragma once

#include "core/time_point.hpp"

#include <cstdint>
#include <string>

namespace msomni::control {

struct lease_settings {
  nanos ttl{std::chrono::seconds(5)};
  // How often the leader renews and a standby campaigns: a third of the TTL, so two renewals
  // may fail before the lease runs out.
  nanos renew_interval() const { return ttl / 3; }
  // The leader stops committing this long before its lease could have run out on the store.
  nanos margin() const { return ttl / 6; }
};

enum class leader_role { standby, leading, deposed };
const char* to_string(leader_role r);

class leadership_core {
 public:
  explicit leadership_core(lease_settings s) : s_(s) {}

  // The campaign transaction (sent at `sent_at`) made this process the leader: the leader
  // key was created at revision `term` on a lease of `ttl_s` seconds.
  void on_elected(time_point sent_at, int64_t term, int64_t ttl_s);
  // A renewal sent at `sent_at` came back with `ttl_left_s` (0: the store let the lease go).
  void on_renewed(time_point sent_at, int64_t ttl_left_s);
  // A renewal got no answer; `why` is kept if this ends the leadership later.
  void on_renew_failed(const std::string& why);
  // A commit's fence (the term compare) failed: another leader has the job.
  void on_fenced(const std::string& why);
  // Steps down when the lease may have run out; true once, on the call that deposed it.
  bool check(time_point now);

  leader_role role() const { return role_; }
  bool may_commit(time_point now) const { return role_ == leader_role::leading && now < step_down_at(); }
  bool renewal_due(time_point now) const { return role_ == leader_role::leading && now >= last_sent_ + s_.renew_interval(); }
  time_point step_down_at() const { return deadline_ - s_.margin(); }
  // What is left of the lease as this process can vouch for it (0 when not leading).
  nanos lease_left(time_point now) const;
  int64_t term() const { return term_; }
  const std::string& why_deposed() const { return why_; }
  // Deposed because a commit met another leader's term, not because the lease ran out.
  bool fenced() const { return fenced_; }
  const lease_settings& settings() const { return s_; }

 private:
  void depose(std::string why);

  lease_settings s_;
  leader_role role_ = leader_role::standby;
  int64_t term_ = 0;
  time_point last_sent_{};
  time_point deadline_{};
  std::string last_failure_;
  std::string why_;
  bool newly_deposed_ = false;
  bool fenced_ = false;
};

// What a process that just won the election does with the job it finds in the store.
enum class takeover { start, take_over, job_ended, other_config };
struct election_view {
  bool state_known = false;      // the store holds a state for this job
  std::string phase;             // its phase: running | finished | failed | stopped | preempted | deposed
  std::string fingerprint;       // the configuration it ran with
  bool saw_that_leader = false;  // this process stood by while that state's leader led
};
// other_config when the fingerprints differ; job_ended when the job this process stood by for
// has ended (a standby does not start a job again); take_over when its leader left it running
// (or was deposed); start otherwise (a first start, or a new start after an end).
takeover after_election(const election_view& v, const std::string& my_fingerprint);
const char* to_string(takeover t);

}  // namespace msomni::control
