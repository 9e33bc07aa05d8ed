// leadership_core: when a control process leads, renews and steps down, and what an elected
// process does with the job it finds (unit tests, manual time).
#include "leadership_core.hpp"
#include "control_keys.hpp"
#include "core/store_url.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::control;
using namespace std::chrono_literals;

namespace {
time_point at(nanos t) { return time_point{} + t; }
}  // namespace

TEST_CASE("leadership: elected on a lease, renewals extend it from the time they were sent") {
  leadership_core c(lease_settings{3s});
  CHECK(c.role() == leader_role::standby);
  CHECK_FALSE(c.may_commit(at(0s)));
  c.on_elected(at(1s), 42, 3);
  CHECK(c.role() == leader_role::leading);
  CHECK(c.term() == 42);
  CHECK(c.may_commit(at(1s)));
  CHECK(c.lease_left(at(2s)) == 2s);
  CHECK_FALSE(c.renewal_due(at(1500ms)));
  CHECK(c.renewal_due(at(2s)));  // a third of the TTL
  c.on_renewed(at(2s), 3);
  CHECK(c.lease_left(at(2s)) == 3s);
  CHECK_FALSE(c.check(at(4s)));
  CHECK(c.role() == leader_role::leading);
}

TEST_CASE("leadership: without a confirmed renewal it steps down a margin before the lease could run out") {
  leadership_core c(lease_settings{3s});
  c.on_elected(at(0s), 7, 3);
  c.on_renew_failed("etcd at 127.0.0.1:1: Couldn't connect to server");
  CHECK_FALSE(c.check(at(2499ms)));  // 3 s less the margin of 0.5 s
  CHECK(c.may_commit(at(2499ms)));
  CHECK(c.check(at(2500ms)));
  CHECK(c.role() == leader_role::deposed);
  CHECK_FALSE(c.may_commit(at(2500ms)));
  CHECK(c.why_deposed().find("Couldn't connect") != std::string::npos);
  CHECK_FALSE(c.check(at(3s)));  // reported once
  // A deposed process never leads again, and later answers change nothing.
  c.on_renewed(at(3s), 3);
  c.on_elected(at(3s), 9, 3);
  CHECK(c.role() == leader_role::deposed);
  CHECK(c.lease_left(at(3s)) == 0s);
}

TEST_CASE("leadership: a renewal answered with no time left, or a fenced commit, deposes at once") {
  leadership_core a(lease_settings{5s});
  a.on_elected(at(0s), 1, 5);
  a.on_renewed(at(1s), 0);
  CHECK(a.role() == leader_role::deposed);
  CHECK(a.check(at(1s)));

  leadership_core b(lease_settings{5s});
  b.on_elected(at(0s), 1, 5);
  b.on_fenced("the leader key is term 9's");
  CHECK(b.check(at(0s)));
  CHECK(b.why_deposed().find("term 9") != std::string::npos);
}

TEST_CASE("leadership: a late answer to an older renewal never shortens the lease") {
  leadership_core c(lease_settings{6s});
  c.on_elected(at(0s), 3, 6);
  c.on_renewed(at(4s), 6);  // deadline 10 s
  c.on_renewed(at(2s), 6);  // an older send answered later: deadline stays 10 s
  CHECK(c.lease_left(at(4s)) == 6s);
}

TEST_CASE("after an election: start, take over, stand down, or refuse another configuration") {
  election_view none;
  CHECK(after_election(none, "f") == takeover::start);
  election_view running{true, "running", "f", false};
  CHECK(after_election(running, "f") == takeover::take_over);
  CHECK(after_election(running, "g") == takeover::other_config);
  election_view ended{true, "finished", "f", true};
  CHECK(after_election(ended, "f") == takeover::job_ended);
  ended.saw_that_leader = false;  // a new start after the job ended: a new run
  CHECK(after_election(ended, "f") == takeover::start);
  election_view stopped{true, "stopped", "f", true};
  CHECK(after_election(stopped, "f") == takeover::job_ended);
}

TEST_CASE("the store's keys and records round-trip") {
  job_keys k("demo");
  CHECK(k.leader() == "/msomni/jobs/demo/leader");
  CHECK(k.event(7) == "/msomni/jobs/demo/events/000000000007");
  CHECK(k.event(7) < k.event(10));  // key order is commit order
  leader_record r{"h:1", "h", 1, "/r", "127.0.0.1:9", "", 5, 3};
  CHECK(leader_record::from_json(r.to_json().dump()).to_json() == r.to_json());
  job_state s{"running", 12, "h:1", "abc", 40, 2, 300, 3, 99, 2};
  CHECK(job_state::from_json(s.to_json().dump()).to_json() == s.to_json());
  CHECK(job_state::from_json("not json").phase.empty());
}

TEST_CASE("store URLs: etcd://HOST:PORT[,HOST:PORT...] and what is wrong with the others") {
  std::string why;
  CHECK(parse_store_url("etcd://127.0.0.1:2379", why) == std::vector<std::string>{"127.0.0.1:2379"});
  CHECK(parse_store_url("etcd://a:1,b:2,c:3", why).size() == 3);
  for (const char* bad : {"http://a:1", "etcd://", "etcd://a", "etcd://a:0", "etcd://a:70000", "etcd://a:1,", "etcd://:5"}) {
    CAPTURE(bad);
    CHECK(parse_store_url(bad, why).empty());
    CHECK_FALSE(why.empty());
  }
}
