// A first rank lost while the job starts, with no free slot for a replacement: the job
// starts with the ranks that are left when they make an allowed world size, and otherwise
// fails at once with the reason. It never waits forever and never starts below
// min_replicas. (Both were found by the fault soak: a killed node agent mid-start.)
#include "elastic_test_support.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::orchestrator;
using namespace msomni::orchestrator::testing;
using namespace std::chrono_literals;

namespace {

elastic_settings two_nodes_of_one(int64_t min_replicas) { return small_job(2, min_replicas, 2); }

msg::rank_ready ready(const std::string& name, const std::string& node) {
  return {name, node, "127.0.0.1:5000", 100, false, 0};
}

// Two one-slot agents; returns the spawned (rank, node) pairs.
std::vector<spawn_on_agent> start_two(elastic_core& c) {
  c.on_agent({"a", "r", "s", 1, true}, time_point{0s});
  const auto acts = c.on_agent({"b", "r", "s", 1, true}, time_point{0s});
  const auto spawns = all_of<spawn_on_agent>(acts);
  REQUIRE(spawns.size() == 2);
  return spawns;
}

}  // namespace

TEST_CASE("a node lost after the other rank is ready fails a job that needs both, with the reason") {
  elastic_core c(two_nodes_of_one(2));
  const auto spawns = start_two(c);
  CHECK(all_of<send_plan>(c.on_rank_ready(ready(spawns[0].name, spawns[0].node), time_point{1s})).empty());
  const auto acts = c.on_agent_down(spawns[1].node, "no heartbeat for 1 s", time_point{2s});
  const auto done = all_of<finish_job>(acts);
  REQUIRE(done.size() == 1);
  CHECK_FALSE(done[0].ok);
  CHECK(done[0].reason.find("cannot start: " + spawns[1].name + " was lost while starting") != std::string::npos);
  CHECK(done[0].reason.find("1 first ranks are left, min_replicas is 2, and no agent has a free slot") != std::string::npos);
  CHECK(all_of<stop_on_agent>(acts).size() == 2);  // the lost rank and the one left
  CHECK(all_of<send_plan>(acts).empty());
  CHECK(c.finished());
}

TEST_CASE("a node lost before the other rank is ready never starts the job below min_replicas") {
  elastic_core c(two_nodes_of_one(2));
  const auto spawns = start_two(c);
  const auto down = c.on_agent_down(spawns[1].node, "connection lost", time_point{1s});
  CHECK(all_of<finish_job>(down).size() == 1);
  // The survivor's late ready starts nothing.
  CHECK(all_of<send_plan>(c.on_rank_ready(ready(spawns[0].name, spawns[0].node), time_point{2s})).empty());
}

TEST_CASE("when the ranks left make an allowed world, the job starts with them") {
  elastic_core c(two_nodes_of_one(1));
  const auto spawns = start_two(c);
  CHECK(all_of<send_plan>(c.on_rank_ready(ready(spawns[0].name, spawns[0].node), time_point{1s})).empty());
  const auto acts = c.on_agent_down(spawns[1].node, "connection lost", time_point{2s});
  CHECK(all_of<finish_job>(acts).empty());
  const auto plans = all_of<send_plan>(acts);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.members == std::vector<std::string>{spawns[0].name});
  CHECK(plans[0].plan.grad_accum == 4);
}

TEST_CASE("a replacement that finds a slot keeps the start waiting for it") {
  elastic_core c(two_nodes_of_one(2));
  const auto spawns = start_two(c);
  CHECK(all_of<spawn_on_agent>(c.on_agent({"c", "r", "s", 1, true}, time_point{0s})).empty());  // a spare node
  const auto acts = c.on_agent_down(spawns[1].node, "connection lost", time_point{1s});
  CHECK(all_of<finish_job>(acts).empty());
  const auto again = all_of<spawn_on_agent>(acts);
  REQUIRE(again.size() == 1);
  CHECK(again[0].node == "c");
  CHECK(all_of<send_plan>(c.on_rank_ready(ready(spawns[0].name, spawns[0].node), time_point{2s})).empty());
  const auto start = all_of<send_plan>(c.on_rank_ready(ready(again[0].name, "c"), time_point{3s}));
  REQUIRE(start.size() == 1);
  CHECK(start[0].plan.members == std::vector<std::string>{spawns[0].name, again[0].name});
}
