// The control store client and control_leadership against real etcd servers on loopback:
// leases, transactions, the campaign, a takeover, the fence that keeps a deposed leader from
// committing, and a 3-member cluster losing a member.
#include "control_leadership.hpp"
#include "store/etcd_client.hpp"

#include "support/etcd_servers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

using namespace msomni;
using namespace std::chrono_literals;
using msomni::testing::etcd_servers;

namespace {

control::leadership_options options_for(const etcd_servers& etcd, const std::string& job, nanos ttl = 3s) {
  control::leadership_options o;
  o.endpoints = etcd.endpoints();
  o.job = job;
  o.fingerprint = "f1";
  o.run_dir = "/tmp/unused";
  o.ttl = ttl;
  return o;
}

void require_ready(etcd_servers& etcd) { REQUIRE_MESSAGE(etcd.wait_ready(), etcd.log(0)); }

nlohmann::ordered_json event_line(const std::string& kind, uint64_t step) {
  return {{"event", kind}, {"kind", kind}, {"step", step}, {"attempt", 1}};
}

std::vector<store::key_value> events_of(store::etcd_client& c, const std::string& job) {
  return c.get_prefix(control::job_keys(job).events());
}

}  // namespace

TEST_CASE("etcd client: leases, fenced transactions, prefixes, and a key that goes with its lease") {
  etcd_servers etcd;
  require_ready(etcd);
  store::etcd_client c(etcd.endpoints(), 2000ms);
  const auto lease = c.grant_lease(5);
  CHECK(lease != 0);
  CHECK(c.keep_alive(lease) > 0);
  const auto created = c.txn({store::compare::created_at("/t/leader", 0)}, {store::operation::put("/t/leader", "a", lease)},
                             {store::operation::range("/t/leader")});
  CHECK(created.succeeded);
  const auto again = c.txn({store::compare::created_at("/t/leader", 0)}, {store::operation::put("/t/leader", "b", lease)},
                           {store::operation::range("/t/leader")});
  CHECK_FALSE(again.succeeded);
  REQUIRE(again.ranged.size() == 1);
  CHECK(again.ranged[0].value == "a");
  CHECK(again.ranged[0].create_revision == created.revision);
  // A commit fenced on the creation revision goes through; fenced on another it does not.
  CHECK(c.txn({store::compare::created_at("/t/leader", created.revision)}, {store::operation::put("/t/x/1", "one")}).succeeded);
  CHECK_FALSE(c.txn({store::compare::created_at("/t/leader", created.revision + 100)}, {store::operation::put("/t/x/2", "two")}).succeeded);
  CHECK(c.get_prefix("/t/x/").size() == 1);
  CHECK(c.get("/t/x/1")->value == "one");
  CHECK_FALSE(c.get("/t/x/2").has_value());
  // Binary-safe values.
  const std::string binary("\0\xff\x01{}\"", 6);
  c.txn({}, {store::operation::put("/t/bin", binary)});
  CHECK(c.get("/t/bin")->value == binary);
  c.revoke(lease);
  CHECK_FALSE(c.get("/t/leader").has_value());
  CHECK(c.keep_alive(lease) == 0);
  c.revoke(lease);  // twice is not an error
  const auto members = c.status_of_members();
  REQUIRE(members.size() == 1);
  CHECK(members[0].up);
  CHECK_FALSE(members[0].version.empty());
}

TEST_CASE("etcd client: no member answering is an error naming each member, after one pass") {
  const auto port = msomni::testing::free_loopback_port();
  store::etcd_client c({"127.0.0.1:" + std::to_string(port)}, 500ms);
  try {
    c.grant_lease(5);
    FAIL("a store that is not there answered");
  } catch (const store::etcd_error& e) {
    CHECK(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  }
  const auto s = c.status_of_members();
  REQUIRE(s.size() == 1);
  CHECK_FALSE(s[0].up);
}

TEST_CASE("leadership: one leader at a time, and a standby takes over the running job when the leader resigns") {
  etcd_servers etcd;
  require_ready(etcd);
  std::atomic<bool> never{false};
  auto a = std::make_unique<control::control_leadership>(options_for(etcd, "takeover"));
  const auto ea = a->campaign(never, [](const std::string&) {});
  REQUIRE(ea.elected);
  CHECK(ea.what == control::takeover::start);
  a->serve([](const std::string&) {});
  a->announce("127.0.0.1:1234", "");
  auto recovery = event_line("recovery", 15);
  recovery["recoveries"] = 2;  // the job's count so far, as the orchestrator journals it
  a->record_event(recovery);
  auto resized = event_line("scale_down_done", 18);
  resized["replicas"] = 1;  // a completed resize, as the orchestrator journals it
  resized["epoch"] = uint64_t{4};
  a->record_event(resized);
  auto early = event_line("attempt_started", 19);
  early["epoch"] = uint64_t{0};  // a line journaled before a plan: the stored epoch does not go back
  a->record_event(early);
  a->record_event(event_line("checkpoint", 20));
  CHECK(a->finish("running"));  // drained; the phase stays running

  control::control_leadership b(options_for(etcd, "takeover"));
  std::vector<std::string> said;
  std::atomic<bool> b_stop{false};
  control::election eb;
  std::thread campaign([&] { eb = b.campaign(b_stop, [&](const std::string& l) { said.push_back(l); }); });
  std::this_thread::sleep_for(2500ms);  // b stands by (several campaign rounds)
  CHECK(a->leading());
  const auto a_id = a->id();
  const auto resigned_at = std::chrono::steady_clock::now();
  a.reset();  // resigns: revokes its lease
  campaign.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - resigned_at);
  REQUIRE(eb.elected);
  CHECK(eb.what == control::takeover::take_over);
  CHECK(eb.term > ea.term);
  CHECK(eb.previous.step == 20);
  CHECK(eb.previous.recoveries == 2);  // the next leader's budget starts there
  CHECK(eb.previous.replicas == 1);    // and its replicas
  CHECK(eb.previous.epoch == 4);       // and its epochs after these
  CHECK(eb.previous.leader == a_id);  // written by a's first commit
  REQUIRE_FALSE(said.empty());
  CHECK(said.front().find("127.0.0.1:1234") != std::string::npos);  // the leader's announced address
  MESSAGE("the standby was elected " << took.count() << " ms after the leader resigned");
}

TEST_CASE("leadership: a leader whose lease is gone is fenced out, and nothing of its term lands after the next term began") {
  etcd_servers etcd;
  require_ready(etcd);
  std::atomic<bool> never{false};
  control::control_leadership a(options_for(etcd, "fence", 30s));  // a long lease: only the fence can stop it
  REQUIRE(a.campaign(never, [](const std::string&) {}).elected);
  std::atomic<int> deposed{0};
  std::string why;
  a.serve([&](const std::string& w) { why = w, ++deposed; });
  a.record_event(event_line("step", 1));
  REQUIRE(a.finish("running"));
  // The lease is taken from under it (as when etcd expires it while the process is stopped).
  store::etcd_client admin(etcd.endpoints(), 2000ms);
  const auto leader = admin.get(control::job_keys("fence").leader());
  REQUIRE(leader);
  admin.revoke(leader->lease);
  control::control_leadership b(options_for(etcd, "fence"));
  const auto eb = b.campaign(never, [](const std::string&) {});
  REQUIRE(eb.elected);
  b.serve([](const std::string&) {});
  // a does not know yet; its next commit is refused by the fence and deposes it.
  a.record_event(event_line("step", 2));
  CHECK_FALSE(a.finish("finished"));
  CHECK(deposed == 1);
  CHECK_FALSE(a.leading());
  CHECK(why.find("fence") != std::string::npos);
  b.record_event(event_line("step", 3));
  REQUIRE(b.finish("finished"));
  // The store's history: every event of a's term was committed before b's term began.
  bool b_seen = false;
  for (const auto& kv : events_of(admin, "fence")) {
    const auto line = nlohmann::json::parse(kv.value);
    if (line["term"] == eb.term) b_seen = true;
    else CHECK(kv.mod_revision < eb.term);
    CHECK(line["step"] != 2);  // a's refused event is not there
  }
  CHECK(b_seen);
  CHECK(control::job_state::from_json(admin.get(control::job_keys("fence").state())->value).phase == "finished");
}

TEST_CASE("leadership: a 3-member cluster losing a member keeps the leader leading and committing") {
  etcd_servers etcd(3);
  require_ready(etcd);
  std::atomic<bool> never{false};
  control::control_leadership a(options_for(etcd, "quorum"));
  REQUIRE(a.campaign(never, [](const std::string&) {}).elected);
  std::atomic<int> deposed{0};
  a.serve([&](const std::string&) { ++deposed; });
  a.record_event(event_line("step", 1));
  REQUIRE(a.finish("running"));
  etcd.stop(0);  // the member the client talks to first
  for (uint64_t s = 2; s <= 6; ++s) {
    a.record_event(event_line("step", s));
    std::this_thread::sleep_for(400ms);  // across several renewals
  }
  CHECK(a.finish("finished"));
  CHECK(a.leading());
  CHECK(deposed == 0);
  store::etcd_client admin({etcd.endpoint(1), etcd.endpoint(2)}, 2000ms);
  CHECK(events_of(admin, "quorum").size() == 6);
  const auto members = store::etcd_client(etcd.endpoints(), 1000ms).status_of_members();
  CHECK_FALSE(members[0].up);
  CHECK(members[1].up);
  CHECK(members[2].up);
}
