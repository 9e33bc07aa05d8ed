// Heartbeat silence in the elastic core: an agent not heard from for longer than the limit is
// declared down on a tick, with its ranks; heartbeats keep it up; the agent in the control
// process is never declared down by silence; a heartbeat does not revive an agent declared
// down (joining again does).
#include "elastic_test_support.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::orchestrator;
using namespace msomni::orchestrator::testing;
using namespace std::chrono_literals;

namespace {

std::vector<journal_event> events_of(const std::vector<action>& acts, const std::string& kind) {
  std::vector<journal_event> out;
  for (const auto& e : all_of<journal_event>(acts))
    if (e.kind == kind) out.push_back(e);
  return out;
}

// Two replicas, one on each of "local" (the in-process agent) and "remote".
elastic_core two_nodes() {
  auto s = small_job(2, 1, 2);
  s.agent_silence_limit = 3s;
  s.in_process_agent = "local";
  elastic_core c(s);
  c.on_agent({"local", "r1", "s1", 1, true}, time_point{0s});
  const auto acts = c.on_agent({"remote", "r2", "s1", 1, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts))
    c.on_rank_ready({sp.name, sp.node, "addr-" + sp.name, 10, false, 0}, time_point{1s});
  REQUIRE(c.world() == 2);
  return c;
}

}  // namespace

TEST_CASE("an agent silent past the limit is down with its ranks, and heartbeats keep it up") {
  auto c = two_nodes();
  c.on_heartbeat("remote", time_point{2s});
  c.on_heartbeat("remote", time_point{4s});
  CHECK(events_of(c.on_tick(time_point{7s}), "agent_down").empty());  // quiet for 3 s: not more than the limit
  const auto acts = c.on_tick(time_point{7500ms});
  const auto down = events_of(acts, "agent_down");
  REQUIRE(down.size() == 1);
  CHECK(down[0].detail == "remote: no heartbeat for 3 s");
  CHECK(events_of(acts, "rank_down").size() == 1);
  CHECK(events_of(acts, "recovery").size() == 1);  // the survivor rolls back
  CHECK_FALSE(c.agents().at("remote").alive);
  CHECK(c.agents().at("local").alive);  // in the control process: never declared down by silence
  CHECK(c.world() == 1);
}

TEST_CASE("a heartbeat after the agent was declared down does not revive it, but joining again does") {
  auto c = two_nodes();
  REQUIRE(events_of(c.on_tick(time_point{10s}), "agent_down").size() == 1);
  c.on_heartbeat("remote", time_point{11s});
  CHECK(events_of(c.on_tick(time_point{11s}), "agent_down").empty());  // declared once
  CHECK_FALSE(c.agents().at("remote").alive);
  c.on_agent({"remote", "r2", "s1", 1, true}, time_point{12s});
  CHECK(c.agents().at("remote").alive);
  CHECK(events_of(c.on_tick(time_point{14s}), "agent_down").empty());  // heard from at 12 s
  CHECK(events_of(c.on_tick(time_point{15500ms}), "agent_down").size() == 1);
}

TEST_CASE("a heartbeat from an agent that never joined is ignored") {
  auto c = two_nodes();
  c.on_heartbeat("stranger", time_point{2s});
  CHECK(c.agents().count("stranger") == 0);
}
