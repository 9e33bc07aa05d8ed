// leadership_core (see leadership_core.hpp).
#include "leadership_core.hpp"

namespace msomni::control {

const char* to_string(leader_role r) {
  switch (r) {
    case leader_role::standby: return "standby";
    case leader_role::leading: return "leading";
    case leader_role::deposed: return "deposed";
  }
  return "?";
}

const char* to_string(takeover t) {
  switch (t) {
    case takeover::start: return "start";
    case takeover::take_over: return "take_over";
    case takeover::job_ended: return "job_ended";
    case takeover::other_config: return "other_config";
  }
  return "?";
}

void leadership_core::on_elected(time_point sent_at, int64_t term, int64_t ttl_s) {
  if (role_ != leader_role::standby) return;  // a deposed process never leads again
  role_ = leader_role::leading;
  term_ = term;
  last_sent_ = sent_at;
  deadline_ = sent_at + std::chrono::seconds(ttl_s);
}

void leadership_core::on_renewed(time_point sent_at, int64_t ttl_left_s) {
  if (role_ != leader_role::leading) return;
  if (ttl_left_s <= 0) return depose("the store let the lease expire (no renewal reached it in time)");
  last_sent_ = sent_at;
  // Never later than a deadline already vouched for by a later send (answers may cross).
  const auto deadline = sent_at + std::chrono::seconds(ttl_left_s);
  if (deadline > deadline_) deadline_ = deadline;
  last_failure_.clear();
}

void leadership_core::on_renew_failed(const std::string& why) {
  if (role_ == leader_role::leading) last_failure_ = why;
}

void leadership_core::on_fenced(const std::string& why) {
  if (role_ != leader_role::leading) return;
  fenced_ = true;
  depose("a commit was refused by its fence: " + why);
}

bool leadership_core::check(time_point now) {
  if (role_ == leader_role::leading && now >= step_down_at())
    depose("no renewal of the lease was confirmed in time" + (last_failure_.empty() ? std::string() : " (" + last_failure_ + ")"));
  const bool newly = newly_deposed_;
  newly_deposed_ = false;
  return newly;
}

nanos leadership_core::lease_left(time_point now) const {
  if (role_ != leader_role::leading || now >= deadline_) return nanos{0};
  return deadline_ - now;
}

void leadership_core::depose(std::string why) {
  if (role_ == leader_role::deposed) return;
  role_ = leader_role::deposed;
  why_ = std::move(why);
  newly_deposed_ = true;
}

takeover after_election(const election_view& v, const std::string& my_fingerprint) {
  if (!v.state_known) return takeover::start;
  if (!v.fingerprint.empty() && v.fingerprint != my_fingerprint) return takeover::other_config;
  if (v.phase == "running" || v.phase == "deposed") return takeover::take_over;
  return v.saw_that_leader ? takeover::job_ended : takeover::start;
}

}  // namespace msomni::control
