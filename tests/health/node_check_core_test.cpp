// The multi-node pre-flight's decisions with made-up reports and pair times: every listed
// node is asked, pairs run one at a time once all passed, a straggler is the node whose
// fastest pairing is slow, and a failure anywhere ends the check with the reason.
#include "node_check_core.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni::health;
using namespace msomni::health::node_checks;
using json = nlohmann::ordered_json;

namespace {

template <class T>
std::vector<T> all_of(const std::vector<action>& acts) {
  std::vector<T> out;
  for (const auto& a : acts)
    if (const auto* p = std::get_if<T>(&a)) out.push_back(*p);
  return out;
}

std::string report(const std::string& verdict, const std::string& failed_id = "") {
  json j{{"node", "x"}, {"verdict", verdict}, {"checks", json::array()}};
  if (!failed_id.empty()) j["checks"].push_back({{"id", failed_id}, {"status", "fail"}, {"reason", "it broke"}});
  return j.dump();
}

json control_report() { return {{"node", "ctl"}, {"verdict", "pass"}, {"checks", json::array()}}; }

node_check_core three_nodes() {
  node_check_settings s;
  s.nodes = {"a", "b", "c"};
  return node_check_core(s, control_report());
}

// Joins and passes every node, then answers each pair with `ms(pair's nodes)`; the last actions.
template <class Fn>
std::vector<action> run_all(node_check_core& c, const std::vector<std::string>& nodes, Fn ms) {
  std::vector<action> last;
  for (const auto& n : nodes) CHECK(all_of<ask_check>(c.on_agent(n)).size() == 1);
  for (const auto& n : nodes) last = c.on_report(n, report("pass"), "addr-" + n);
  for (int guard = 0; guard < 100; ++guard) {
    const auto asks = all_of<ask_pair>(last);
    if (asks.empty()) break;
    REQUIRE(asks.size() == 1);
    const auto& p = asks[0];
    CHECK(p.listener_address == "addr-" + p.listener);
    c.on_pair_result(p.pair, p.dialer, ms(p.dialer, p.listener), "");
    last = c.on_pair_result(p.pair, p.listener, ms(p.dialer, p.listener), "");
  }
  return last;
}

const json* check_of(const json& checks, const std::string& id) {
  for (const auto& c : checks)
    if (c.value("id", "") == id) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("node checks: the pairs wait for every listed node, and a slow node is the straggler") {
  auto c = three_nodes();
  c.on_agent("a");
  CHECK(c.on_report("a", report("pass"), "addr-a").empty());  // b and c not in yet
  auto last = run_all(c, {"b", "c"}, [](const std::string& x, const std::string& y) {
    return x == "c" || y == "c" ? 50.0 : 10.0;  // every pairing of c is slow
  });
  const auto dones = all_of<done>(last);
  REQUIRE(dones.size() == 1);
  CHECK_FALSE(dones[0].failed);
  const auto& r = dones[0].report;
  CHECK(r.at("node") == "ctl");
  CHECK(r.at("nodes").size() == 3);
  CHECK(r.at("job_verdict") == "warn");
  const auto& checks = r.at("multinode").at("checks");
  REQUIRE(check_of(checks, "multinode.straggler"));
  CHECK(check_of(checks, "multinode.straggler")->at("status") == "warn");
  CHECK(check_of(checks, "multinode.straggler")->at("reason").get<std::string>().find("c (") != std::string::npos);
  CHECK(check_of(checks, "multinode.allreduce.c")->at("status") == "warn");
  CHECK(check_of(checks, "multinode.allreduce.a")->at("status") == "pass");
  CHECK(check_of(checks, "multinode.allreduce.a")->at("value") == "10.00");
  CHECK(check_of(checks, "multinode.pairs")->at("value") == "3");
  // A warning is not a failure: every node is admitted.
  CHECK(all_of<admit>(last).size() == 3);
}

TEST_CASE("node checks: one slow pair between two nodes does not make either a straggler") {
  auto c = three_nodes();
  auto last = run_all(c, {"a", "b", "c"}, [](const std::string& x, const std::string& y) {
    return (x == "a" && y == "b") || (x == "b" && y == "a") ? 80.0 : 10.0;  // only the a-b link is slow
  });
  const auto d = all_of<done>(last).at(0);
  CHECK(check_of(d.report.at("multinode").at("checks"), "multinode.straggler")->at("status") == "pass");
}

TEST_CASE("node checks: two nodes cannot name a straggler, and the check says why it is skipped") {
  node_check_settings s;
  s.nodes = {"a", "b"};
  node_check_core c(s, control_report());
  auto last = run_all(c, {"a", "b"}, [](const std::string&, const std::string&) { return 5.0; });
  const auto d = all_of<done>(last).at(0);
  const auto* st = check_of(d.report.at("multinode").at("checks"), "multinode.straggler");
  REQUIRE(st);
  CHECK(st->at("status") == "skipped");
  CHECK(st->at("reason").get<std::string>().find("fewer than 3 nodes") != std::string::npos);
}

TEST_CASE("node checks: a failed node ends the check before any pair, with its failed checks as the reason") {
  auto c = three_nodes();
  for (const char* n : {"a", "b", "c"}) c.on_agent(n);
  c.on_report("a", report("pass"), "addr-a");
  c.on_report("b", report("fail", "comm.ucx.loopback"), "addr-b");
  const auto last = c.on_report("c", report("warn"), "addr-c");
  CHECK(all_of<ask_pair>(last).empty());
  CHECK(all_of<admit>(last).empty());
  const auto d = all_of<done>(last).at(0);
  CHECK(d.failed);
  CHECK(d.reason.find("b: comm.ucx.loopback (it broke)") != std::string::npos);
  CHECK(d.report.at("job_verdict") == "fail");
  CHECK_FALSE(d.report.contains("multinode"));
}

TEST_CASE("node checks: an agent without checks, a garbled report and no answer each fail their node") {
  auto c = three_nodes();
  for (const char* n : {"a", "b", "c"}) c.on_agent(n);
  c.on_report("a", "", "");
  c.on_report("b", "{not json", "addr-b");
  const auto last = c.on_no_report("c", "request timed out");
  const auto d = all_of<done>(last).at(0);
  CHECK(d.failed);
  CHECK(d.reason.find("a: node.report (the agent runs no node checks") != std::string::npos);
  CHECK(d.reason.find("b: node.report (the agent's report is not") != std::string::npos);
  CHECK(d.reason.find("c: node.report (no report from the agent: request timed out)") != std::string::npos);
}

TEST_CASE("node checks: a pair whose all-reduce failed fails the check, naming the pair and the end") {
  node_check_settings s;
  s.nodes = {"a", "b"};
  node_check_core c(s, control_report());
  c.on_agent("a");
  c.on_agent("b");
  c.on_report("a", report("pass"), "addr-a");
  const auto ask = all_of<ask_pair>(c.on_report("b", report("pass"), "addr-b")).at(0);
  CHECK(c.on_pair_result(ask.pair, ask.dialer, 0, "no connection within 10 s").empty());
  CHECK(c.on_pair_result(ask.pair + 7, ask.listener, 3, "").empty());  // a stale answer changes nothing
  const auto last = c.on_pair_result(ask.pair, ask.listener, 0, "ring timed out");
  const auto d = all_of<done>(last).at(0);
  CHECK(d.failed);
  CHECK(d.reason.find("multinode: multinode.pairs (a-b: ") != std::string::npos);
  CHECK(d.reason.find("no connection within 10 s") != std::string::npos);
}

TEST_CASE("node checks: a node joining after the start is checked alone, then admitted or refused") {
  node_check_settings s;
  s.nodes = {"a"};
  node_check_core c(s, control_report());
  c.on_agent("a");
  const auto first = c.on_report("a", report("pass"), "addr-a");
  CHECK(all_of<done>(first).size() == 1);
  CHECK(all_of<admit>(first).size() == 1);
  CHECK(c.over());
  CHECK(all_of<ask_check>(c.on_agent("late")).size() == 1);
  CHECK(all_of<admit>(c.on_report("late", report("warn"), "")).size() == 1);
  c.on_agent("bad");
  const auto refused = all_of<refuse>(c.on_report("bad", report("fail", "host.memory"), ""));
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].reason.find("host.memory") != std::string::npos);
}

TEST_CASE("node checks: every pair up to 8 nodes, each node with its next two beyond") {
  std::vector<std::string> five{"n0", "n1", "n2", "n3", "n4"};
  CHECK(node_check_core::plan_pairs(five, 8).size() == 10);
  std::vector<std::string> ten;
  for (int i = 0; i < 10; ++i) ten.push_back("n" + std::to_string(i));
  const auto pairs = node_check_core::plan_pairs(ten, 8);
  CHECK(pairs.size() == 20);
  for (const auto& n : ten)
    CHECK(std::count_if(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == n || p.second == n; }) == 4);
  CHECK(node_check_core::plan_pairs({"solo"}, 8).empty());
}

TEST_CASE("a listed node whose agent never joins: at the gather deadline the check goes on without it, and it is checked alone when it comes") {
  auto fresh = three_nodes();
  for (const char* n : {"a", "b"}) fresh.on_agent(n);
  CHECK(all_of<ask_pair>(fresh.on_report("a", report("pass"), "addr-a")).empty());
  CHECK(all_of<ask_pair>(fresh.on_report("b", report("pass"), "addr-b")).empty());  // still waiting for c
  auto acts = fresh.on_gather_deadline();
  CHECK(fresh.missing() == std::vector<std::string>{"c"});
  const auto asks = all_of<ask_pair>(acts);
  REQUIRE(asks.size() == 1);  // a and b pair up without c
  fresh.on_pair_result(asks[0].pair, asks[0].dialer, 12.0, "");
  acts = fresh.on_pair_result(asks[0].pair, asks[0].listener, 12.0, "");
  const auto done_acts = all_of<done>(acts);
  REQUIRE(done_acts.size() == 1);
  CHECK_FALSE(done_acts[0].failed);
  CHECK(done_acts[0].report.at("missing") == json::array({"c"}));
  CHECK(done_acts[0].report.at("nodes").size() == 2);
  CHECK(all_of<admit>(acts).size() == 2);
  CHECK(fresh.on_gather_deadline().empty());  // over: nothing more
  // c comes after all: checked alone, then admitted.
  CHECK(all_of<ask_check>(fresh.on_agent("c")).size() == 1);
  CHECK(all_of<admit>(fresh.on_report("c", report("pass"), "addr-c")).size() == 1);
}
