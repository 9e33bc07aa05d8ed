// The elastic core's reconnects and the control process's own pauses, driven with made-up
// events and times: a member whose connection dropped keeps its place for the reconnect
// window and is taken back as it runs; past the window, or when the others stall waiting for
// it, it is down once; a pause of the control process does not count as its agents' silence;
// a stop asked for during a recovery is queued and goes out once the job trains again.
#include "elastic_test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni;
using namespace msomni::orchestrator;
using namespace msomni::orchestrator::testing;
using namespace std::chrono_literals;

namespace {

bool has_event(const std::vector<action>& acts, const std::string& kind) {
  for (const auto& e : all_of<journal_event>(acts))
    if (e.kind == kind) return true;
  return false;
}

// Two replicas on one agent (in this process, never silent) and one remote agent, both ranks
// active at epoch 1; reconnect window 6 s, agents silent after 3 s.
elastic_core two_ranks(std::vector<std::string>& ring) {
  auto s = small_job(2, 1, 2);
  s.reconnect_window = 6s;
  s.agent_silence_limit = 3s;
  s.in_process_agent = "local";
  elastic_core c(s);
  c.on_agent({"remote", "r1", "s1", 0, true}, time_point{0s});
  auto acts = c.on_agent({"local", "r0", "s0", 2, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts))
    acts = c.on_rank_ready({sp.name, sp.node, "127.0.0.1:1", 100, false, 0}, time_point{1s});
  const auto plans = all_of<send_plan>(acts);
  REQUIRE(plans.size() == 1);
  ring = plans[0].plan.members;
  c.on_step(5, 2, time_point{2s});
  return c;
}

msg::rank_rejoin rejoin(const std::string& name, const std::vector<std::string>& ring, uint64_t epoch, uint64_t step) {
  msg::rank_rejoin r;
  r.name = name;
  r.node = "local";
  r.address = "127.0.0.1:2";
  r.pid = 100;
  r.epoch = epoch;
  r.members = ring;
  r.steps_done = step;
  r.training = true;
  return r;
}

}  // namespace

TEST_CASE("a member whose connection dropped keeps its place and is taken back as it runs when it reconnects") {
  std::vector<std::string> ring;
  auto c = two_ranks(ring);
  const auto lost = c.on_rank_unreachable(ring[0], "connection lost", time_point{10s});
  CHECK(has_event(lost, "rank_unreachable"));
  CHECK(all_of<send_plan>(lost).empty());
  CHECK(c.members().at(ring[0]).state == member_state::active);
  CHECK(all_of<send_plan>(c.on_tick(time_point{15s})).empty());  // within the window
  const auto back = c.on_rank_rejoin(rejoin(ring[0], ring, c.epoch(), 900), time_point{15s});
  CHECK(has_event(back, "rank_reconnected"));
  const auto answers = all_of<answer_rejoin>(back);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].adopted);
  CHECK(answers[0].in_place);
  CHECK(all_of<send_plan>(back).empty());  // no rollback
  CHECK(c.last_step() == 900);
  // Past the old window nothing happens: it is no longer unreachable.
  CHECK(all_of<journal_event>(c.on_tick(time_point{30s})).empty());
  CHECK(c.recoveries() == 0);
}

TEST_CASE("a member that does not reconnect within the window is down, and the job recovers once") {
  std::vector<std::string> ring;
  auto c = two_ranks(ring);
  c.on_rank_unreachable(ring[1], "connection lost", time_point{10s});
  const auto late = c.on_tick(time_point{16500ms});
  CHECK(has_event(late, "rank_down"));
  CHECK(has_event(late, "recovery"));
  CHECK(c.members().at(ring[1]).state == member_state::dead);
  CHECK(c.recoveries() == 1);
  // A rejoin now comes too late: the rank is no member any more and is told to leave.
  const auto answers = all_of<answer_rejoin>(c.on_rank_rejoin(rejoin(ring[1], ring, 1, 900), time_point{17s}));
  REQUIRE(answers.size() == 1);
  CHECK_FALSE(answers[0].adopted);
}

TEST_CASE("a member unreachable while the others stall waiting for it is down at once: one recovery, not one per stall") {
  std::vector<std::string> ring;
  auto c = two_ranks(ring);
  c.on_rank_unreachable(ring[0], "silent", time_point{10s});
  const auto stalled = c.on_rank_stalled({ring[1], c.epoch(), 6, "member did not answer"}, time_point{11s});
  CHECK(has_event(stalled, "rank_down"));
  const auto plans = all_of<send_plan>(stalled);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.members == std::vector<std::string>{ring[1]});
  CHECK(c.recoveries() == 1);
  // Its window no longer runs.
  CHECK_FALSE(has_event(c.on_tick(time_point{20s}), "rank_down"));
}

TEST_CASE("a member that reconnects in another epoch, or while a change is under way, is down and told to leave") {
  std::vector<std::string> ring;
  auto c = two_ranks(ring);
  c.on_rank_unreachable(ring[0], "connection lost", time_point{10s});
  const auto back = c.on_rank_rejoin(rejoin(ring[0], ring, c.epoch() + 7, 900), time_point{12s});
  CHECK(has_event(back, "rank_down"));
  const auto answers = all_of<answer_rejoin>(back);
  REQUIRE(answers.size() == 1);
  CHECK_FALSE(answers[0].adopted);
}

TEST_CASE("without a reconnect window a lost connection is a down rank at once") {
  auto s = small_job(2, 1, 2);
  elastic_core c(s);
  auto acts = c.on_agent({"local", "r0", "s0", 2, true}, time_point{0s});
  std::vector<std::string> names;
  for (const auto& sp : all_of<spawn_on_agent>(acts)) {
    names.push_back(sp.name);
    acts = c.on_rank_ready({sp.name, sp.node, "127.0.0.1:1", 100, false, 0}, time_point{1s});
  }
  CHECK(has_event(c.on_rank_unreachable(names[0], "connection lost", time_point{5s}), "rank_down"));
}

TEST_CASE("the control process's own pause is journaled and not counted as its agents' silence") {
  std::vector<std::string> ring;
  auto c = two_ranks(ring);
  c.on_heartbeat("remote", time_point{2s});
  // Stood still from 2.2 s to 42.2 s: the remote agent's last heartbeat is 2 s old in its own time.
  const auto paused = c.on_own_pause(40s, time_point{42200ms});
  CHECK(has_event(paused, "control_paused"));
  CHECK_FALSE(has_event(c.on_tick(time_point{42200ms}), "agent_down"));
  // Still silent 3 s later in running time: down.
  CHECK(has_event(c.on_tick(time_point{45500ms}), "agent_down"));
}

TEST_CASE("a stop asked for during a recovery is queued and goes out once the job trains again") {
  std::vector<std::string> ring;
  auto c = two_ranks(ring);
  const auto down = c.on_rank_down(ring[1], "killed", time_point{10s});
  REQUIRE(has_event(down, "recovery"));
  const auto stop = c.stop(time_point{10500ms});
  CHECK(stop.ok);
  CHECK(stop.text.find("queued: the job is recovering") == 0);
  CHECK(has_event(stop.actions, "stop_queued"));
  CHECK(all_of<send_plan>(stop.actions).empty());
  CHECK(c.stop_queued());
  // A second stop is refused while the first waits.
  CHECK_FALSE(c.stop(time_point{10600ms}).ok);
  CHECK(all_of<send_plan>(c.on_tick(time_point{11s})).empty());  // still recovering
  c.on_step(6, 1, time_point{12s});                               // trains again, its replacement still starting
  CHECK(all_of<send_plan>(c.on_tick(time_point{12100ms})).empty());
  const auto spawns = all_of<spawn_on_agent>(down);
  REQUIRE(spawns.size() == 1);
  REQUIRE(all_of<send_plan>(c.on_rank_ready({spawns[0].name, spawns[0].node, "127.0.0.1:3", 101, false, 0},
                                            time_point{13s})).size() == 1);
  c.on_step(8, 2, time_point{14s});  // the replacement joined: nothing under way
  const auto out = c.on_tick(time_point{14200ms});
  CHECK(has_event(out, "stop"));
  const auto plans = all_of<send_plan>(out);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.checkpoint_first);
  CHECK(plans[0].plan.members.empty());
  CHECK_FALSE(c.stop_queued());
}

TEST_CASE("during a change a lost connection is a down rank at once: the others wait for it at a barrier") {
  std::vector<std::string> ring;
  auto c = two_ranks(ring);
  // A stall before the control process saw the silence: a rollback with both members is out.
  REQUIRE(all_of<send_plan>(c.on_rank_stalled({ring[1], c.epoch(), 6, "peer down"}, time_point{10s})).size() == 1);
  const auto lost = c.on_rank_unreachable(ring[0], "silent", time_point{11s});
  CHECK(has_event(lost, "rank_down"));
  CHECK_FALSE(has_event(lost, "rank_unreachable"));
  const auto plans = all_of<send_plan>(lost);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.members == std::vector<std::string>{ring[1]});
}
