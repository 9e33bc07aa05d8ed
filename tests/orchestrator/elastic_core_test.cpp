// The elastic state machine, driven with made-up events and times: start, scale-down with
// its grace period, scale-up, failure with rollback and topology-aware replacement, stop,
// and the refusals a user sees.
#include "elastic_test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni;
using namespace msomni::orchestrator;
using namespace msomni::orchestrator::testing;
using namespace std::chrono_literals;

namespace {

elastic_settings four_replicas() {
  auto s = small_job(4, 2, 4);
  s.grace_period = 30s;
  return s;
}

bool has_event(const std::vector<action>& acts, const std::string& kind) {
  for (const auto& e : all_of<journal_event>(acts))
    if (e.kind == kind) return true;
  return false;
}

msg::rank_ready ready(const std::string& name, const std::string& node) {
  return {name, node, "127.0.0.1:" + std::to_string(5000 + name.size()), 100, false, 0};
}

// Starts a 4-replica job on two agents of `slots` each and makes every rank ready.
elastic_core running_job(std::vector<action>& acts, int64_t slots = 3) {
  elastic_core c(four_replicas());
  auto a1 = c.on_agent({"n1", "rack1", "sw1", slots, true}, time_point{0s});
  CHECK(all_of<spawn_on_agent>(a1).empty());
  acts = c.on_agent({"n2", "rack2", "sw1", slots, true}, time_point{0s});
  const auto spawns = all_of<spawn_on_agent>(acts);
  REQUIRE(spawns.size() == 4);
  for (const auto& s : spawns) acts = c.on_rank_ready(ready(s.name, s.node), time_point{1s});
  return c;
}

}  // namespace

TEST_CASE("the first ranks start once the agents offer enough slots and get one plan") {
  std::vector<action> acts;
  auto c = running_job(acts);
  const auto plans = all_of<send_plan>(acts);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.epoch == 1);
  CHECK(plans[0].plan.members.size() == 4);
  CHECK(plans[0].plan.grad_accum == 1);
  CHECK(plans[0].plan.source == msg::state_source::checkpoint);
  CHECK(plans[0].to.size() == 4);
  CHECK(c.world() == 4);
  // Packed: the group fills n1 (3 slots) before it spills to n2.
  int on_n1 = 0;
  for (const auto& [n, m] : c.members()) on_n1 += m.node == "n1";
  CHECK(on_n1 == 3);
}

TEST_CASE("scale-down checkpoints first and completes on the first step at the new world") {
  std::vector<action> acts;
  auto c = running_job(acts);
  c.on_step(10, 4, time_point{10s});
  auto o = c.scale_to(2, 0s, time_point{11s});
  REQUIRE(o.ok);
  const auto plans = all_of<send_plan>(o.actions);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.members.size() == 2);
  CHECK(plans[0].plan.checkpoint_first);
  CHECK(plans[0].plan.grad_accum == 2);
  CHECK(plans[0].to.size() == 4);  // the leavers must hear it too
  CHECK_FALSE(c.scale_to(4, 0s, time_point{12s}).ok);  // one change at a time
  for (const auto& [n, m] : c.members())
    if (m.state == member_state::leaving) c.on_rank_left({n, 2, 11, "decommissioned", 0}, time_point{13s});
  CHECK(all_of<journal_event>(c.on_step(11, 4, time_point{13s})).empty());
  auto done = c.on_step(12, 2, time_point{14s});
  CHECK(has_event(done, "scale_down_done"));
  CHECK(c.world() == 2);
  // The completed resize carries the job's replicas from now on (a control store keeps them).
  for (const auto& e : all_of<journal_event>(done))
    if (e.kind == "scale_down_done") CHECK(e.numbers == std::vector<std::pair<std::string, int64_t>>{{"replicas", 2}});
}

TEST_CASE("a core that takes over from earlier leaders plans after their epochs") {
  auto s = four_replicas();
  s.epochs_before = 7;
  elastic_core c(s);
  CHECK(c.epoch() == 7);  // events before the first plan say where the job stood
  c.on_agent({"n1", "rack1", "sw1", 3, true}, time_point{0s});
  std::vector<action> acts;
  for (const auto& sp : all_of<spawn_on_agent>(c.on_agent({"n2", "rack2", "sw1", 3, true}, time_point{0s})))
    acts = c.on_rank_ready(ready(sp.name, sp.node), time_point{1s});
  const auto plans = all_of<send_plan>(acts);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.epoch == 8);
}

TEST_CASE("leavers that overrun the grace period are stopped and the rest roll back") {
  std::vector<action> acts;
  auto c = running_job(acts);
  REQUIRE(c.scale_to(2, 5s, time_point{20s}).ok);
  CHECK(all_of<stop_on_agent>(c.on_tick(time_point{24s})).empty());
  auto late = c.on_tick(time_point{26s});
  CHECK(all_of<stop_on_agent>(late).size() == 2);
  CHECK(has_event(late, "grace_period_expired"));
  const auto plans = all_of<send_plan>(late);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.source == msg::state_source::checkpoint);
  CHECK(plans[0].plan.members.size() == 2);
}

TEST_CASE("scale-up starts new ranks and joins them once all are ready") {
  std::vector<action> acts;
  auto c = running_job(acts);
  c.scale_to(2, 0s, time_point{10s});
  for (const auto& [n, m] : c.members())
    if (m.state == member_state::leaving) c.on_rank_left({n, 2, 11, "decommissioned", 0}, time_point{11s});
  c.on_step(12, 2, time_point{12s});
  auto o = c.scale_to(4, 0s, time_point{20s});
  REQUIRE(o.ok);
  const auto spawns = all_of<spawn_on_agent>(o.actions);
  REQUIRE(spawns.size() == 2);
  CHECK(all_of<send_plan>(c.on_rank_ready(ready(spawns[0].name, spawns[0].node), time_point{21s})).empty());
  auto joined = c.on_rank_ready(ready(spawns[1].name, spawns[1].node), time_point{22s});
  const auto plans = all_of<send_plan>(joined);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.members.size() == 4);
  CHECK(plans[0].plan.source == msg::state_source::carry_on);
  CHECK(plans[0].plan.grad_accum == 1);
  CHECK(has_event(c.on_step(30, 4, time_point{25s}), "scale_up_done"));
}

TEST_CASE("a dead rank triggers a rollback on the survivors and a replacement near it") {
  std::vector<action> acts;
  auto c = running_job(acts, 3);
  std::string victim;
  for (const auto& [n, m] : c.members())
    if (m.node == "n2") victim = n;
  REQUIRE_FALSE(victim.empty());
  auto down = c.on_rank_down(victim, "process exited with signal 9", time_point{30s});
  CHECK(has_event(down, "recovery"));
  const auto plans = all_of<send_plan>(down);
  REQUIRE(plans.size() == 1);
  // 3 survivors cannot split a global batch of 8 (micro_batch 2): 2 continue, 1 leaves.
  CHECK(plans[0].plan.members.size() == 2);
  CHECK(plans[0].plan.source == msg::state_source::checkpoint);
  const auto spawns = all_of<spawn_on_agent>(down);
  REQUIRE(spawns.size() == 2);     // back to the target of 4
  CHECK(spawns[0].node == "n2");  // same node first, then rack, then switch
  // A stalled report of the old epoch does not roll back twice; one in the new epoch does.
  CHECK(all_of<send_plan>(c.on_rank_stalled({plans[0].plan.members[0], 1, 29, "peer down"}, time_point{31s})).empty());
  CHECK(all_of<send_plan>(c.on_rank_stalled({plans[0].plan.members[0], plans[0].plan.epoch, 25, "peer down"},
                                            time_point{31s})).size() == 1);
  c.on_step(21, 2, time_point{34s});
  CHECK_FALSE(has_event(c.on_step(22, 2, time_point{35s}), "recovered"));  // already counted at step 21
}

TEST_CASE("a member lost while a rollback plan is out is part of that recovery, not another") {
  std::vector<action> acts;
  auto c = running_job(acts, 3);
  c.on_step(20, 4, time_point{20s});
  const auto members = all_of<send_plan>(acts).at(0).plan.members;
  REQUIRE(members.size() == 4);
  // A survivor's send to the killed peer failed first: its stall starts the recovery...
  auto stalled = c.on_rank_stalled({members[0], 1, 21, "ring epoch 1: a send failed"}, time_point{21s});
  REQUIRE(all_of<send_plan>(stalled).size() == 1);
  CHECK(c.recoveries() == 1);
  // ...then the peer's own loss arrives: the plan is made again without it, still recovery 1.
  auto down = c.on_rank_down(members[3], "connection lost", time_point{22s});
  const auto again = all_of<send_plan>(down);
  REQUIRE(again.size() == 1);
  const auto& planned = again[0].plan.members;
  CHECK(std::find(planned.begin(), planned.end(), members[3]) == planned.end());
  CHECK(c.recoveries() == 1);
  bool continued = false;
  for (const auto& e : all_of<journal_event>(down))
    if (e.kind == "recovery_replanned") {
      continued = e.detail.find("recovery 1 continued of at most") != std::string::npos;
      CHECK(e.numbers.empty());  // not a recovery of its own: the count is on the first one
    }
  CHECK(continued);
  CHECK_FALSE(has_event(down, "recovery"));
  // Once the rollback's epoch trains, a new loss is a new recovery.
  CHECK(has_event(c.on_step(21, static_cast<uint32_t>(planned.size()), time_point{23s}), "recovered"));
  CHECK(has_event(c.on_rank_down(planned[0], "connection lost", time_point{30s}), "recovery_waiting"));
  CHECK(c.recoveries() == 2);
}

TEST_CASE("stalls in a rollback's own epoch are each counted, so a ring that never forms ends the job") {
  std::vector<action> acts;
  auto c = running_job(acts, 3);
  c.on_step(20, 4, time_point{20s});
  const auto members = all_of<send_plan>(acts).at(0).plan.members;
  std::vector<action> last;
  for (int i = 0; i < 4; ++i) last = c.on_rank_stalled({members[0], c.epoch(), 21, "a send failed"}, time_point{21s + i * 1s});
  CHECK(c.recoveries() == 3);
  const auto ends = all_of<finish_job>(last);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0].reason.find("gave up after 3 recoveries") != std::string::npos);
}

TEST_CASE("recoveries an earlier leader spent count against the budget: the next loss past it ends the job") {
  auto s = four_replicas();
  s.recoveries_spent = 2;  // of max_recoveries 3
  elastic_core c(s);
  c.on_agent({"n1", "rack1", "sw1", 3, true}, time_point{0s});
  auto acts = c.on_agent({"n2", "rack2", "sw1", 3, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts)) acts = c.on_rank_ready(ready(sp.name, sp.node), time_point{1s});
  CHECK(c.recoveries() == 2);
  c.on_step(20, 4, time_point{20s});
  const auto members = all_of<send_plan>(acts).at(0).plan.members;
  // The third recovery of the job is still allowed, and says so.
  const auto third = c.on_rank_down(members[3], "connection lost", time_point{21s});
  CHECK(c.recoveries() == 3);
  bool says_third = false;
  for (const auto& e : all_of<journal_event>(third)) {
    if (e.kind != "recovery") continue;
    says_third = says_third || e.detail.find("recovery 3 of at most 3") != std::string::npos;
    // The event carries the job's count, which a control store keeps for the next leader.
    CHECK(e.numbers == std::vector<std::pair<std::string, int64_t>>{{"recoveries", 3}});
  }
  CHECK(says_third);
  CHECK(all_of<finish_job>(third).empty());
}

TEST_CASE("refusals say why: below min_replicas and a batch that does not divide") {
  std::vector<action> acts;
  auto c = running_job(acts);
  auto low = c.scale_to(1, 0s, time_point{5s});
  CHECK_FALSE(low.ok);
  CHECK(low.text.find("min_replicas 2") != std::string::npos);
  auto odd = c.scale_to(3, 0s, time_point{5s});
  CHECK_FALSE(odd.ok);
  CHECK(odd.text.find("cannot be split over 3") != std::string::npos);
  CHECK(odd.actions.empty());
}

TEST_CASE("stop leaves with a final checkpoint and ends the job as stopped") {
  std::vector<action> acts;
  auto c = running_job(acts);
  auto o = c.stop(time_point{40s});
  REQUIRE(o.ok);
  const auto plans = all_of<send_plan>(o.actions);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.members.empty());
  CHECK(plans[0].plan.checkpoint_first);
  std::vector<action> last;
  for (const auto& [n, m] : std::map(c.members())) last = c.on_rank_left({n, 2, 41, "stopped", 0}, time_point{41s});
  const auto fin = all_of<finish_job>(last);
  REQUIRE(fin.size() == 1);
  CHECK(fin[0].ok);
  CHECK(fin[0].stopped);
  CHECK(fin[0].reason == "stopped at step 41 with a final checkpoint");
  CHECK(c.finished());
}

TEST_CASE("a rank that leaves failed ends the job with its reason: the others are stopped, no recovery") {
  std::vector<action> acts;
  auto c = running_job(acts);
  c.on_step(30, 4, time_point{30s});
  msg::rank_left failed{"rank-1", 1, 30, "3 checkpoint saves failed in a row", 0, true};
  const auto end = c.on_rank_left(failed, time_point{31s});
  CHECK(all_of<send_plan>(end).empty());
  CHECK(all_of<spawn_on_agent>(end).empty());
  const auto stops = all_of<stop_on_agent>(end);
  CHECK(stops.size() == 3);
  for (const auto& k : stops) {
    CHECK(k.name != "rank-1");
    CHECK(k.reason == "the job failed");
  }
  const auto fin = all_of<finish_job>(end);
  REQUIRE(fin.size() == 1);
  CHECK_FALSE(fin[0].ok);
  CHECK(fin[0].reason == "rank-1 failed: 3 checkpoint saves failed in a row (after step 30)");
  CHECK(c.finished());
  CHECK(c.recoveries() == 0);
  // The other ranks' failed leaves after the end change nothing.
  failed.name = "rank-2";
  CHECK(c.on_rank_left(failed, time_point{32s}).empty());
}

TEST_CASE("the same leave without the failed mark is an unexpected leave, recovered from") {
  std::vector<action> acts;
  auto c = running_job(acts);
  c.on_step(30, 4, time_point{30s});
  const auto out = c.on_rank_left({"rank-1", 1, 30, "3 checkpoint saves failed in a row", 0}, time_point{31s});
  CHECK(all_of<finish_job>(out).empty());
  CHECK_FALSE(c.finished());
}

TEST_CASE("a job whose ranks all finish ends, and the status lists every rank, departed ones in its history") {
  std::vector<action> acts;
  auto c = running_job(acts);
  c.on_step(100, 4, time_point{50s});
  const auto during = c.status();
  CHECK(during.phase == "running");
  CHECK(during.step == 100);
  REQUIRE(during.ranks.size() == 4);
  for (const auto& r : during.ranks) CHECK(r.state == member_state::active);
  CHECK(status_text(during).find("job running: step 100/100, 4 replicas (target 4), epoch 1\nranks:\n") == 0);
  CHECK(status_text(during).find("active  step 100\n") != std::string::npos);
  CHECK(status_text(during).find("agents:\n") != std::string::npos);
  CHECK(status_text(during).find("history") == std::string::npos);
  std::vector<action> last;
  for (const auto& [n, m] : std::map(c.members())) last = c.on_rank_left({n, 1, 100, "finished", 0}, time_point{51s});
  CHECK(all_of<finish_job>(last).size() == 1);
  CHECK_FALSE(all_of<finish_job>(last)[0].stopped);
  const auto after = c.status();
  CHECK(after.ranks.empty());
  REQUIRE(after.departed.size() == 4);
  for (const auto& r : after.departed) {
    CHECK(r.state == member_state::left);
    CHECK(r.step == 100);
  }
  const auto text = status_text(after);
  CHECK(text.find("ranks:\n  (none)\n") != std::string::npos);
  CHECK(text.find("history (departed ranks):\n") != std::string::npos);
  CHECK(text.find("left at step 100\n") != std::string::npos);
}

TEST_CASE("replacements join only in counts that keep the global batch divisible") {
  elastic_core c(four_replicas());
  auto acts = c.on_agent({"solo", "rack1", "sw1", 4, true}, time_point{0s});
  for (const auto& s : all_of<spawn_on_agent>(acts)) c.on_rank_ready(ready(s.name, s.node), time_point{1s});
  REQUIRE(c.world() == 4);
  auto down = c.on_rank_down("rank-3", "killed", time_point{10s});
  REQUIRE(all_of<send_plan>(down).size() == 1);
  CHECK(c.world() == 2);  // 3 would not divide 8 over micro_batch 2
  auto first = all_of<spawn_on_agent>(down);
  REQUIRE(first.size() == 1);  // the leaver still holds a slot
  c.on_step(11, 2, time_point{11s});
  c.on_rank_left({"rank-2", 2, 10, "decommissioned", 0}, time_point{12s});
  auto more = all_of<spawn_on_agent>(c.on_tick(time_point{13s}));
  REQUIRE(more.size() == 1);
  // One ready replacement alone would make 3: it waits for the second.
  CHECK(all_of<send_plan>(c.on_rank_ready(ready(first[0].name, "solo"), time_point{14s})).empty());
  auto join = all_of<send_plan>(c.on_rank_ready(ready(more[0].name, "solo"), time_point{15s}));
  REQUIRE(join.size() == 1);
  CHECK(join[0].plan.members.size() == 4);
  CHECK(has_event(c.on_step(20, 4, time_point{16s}), "scale_up_done"));
  CHECK(all_of<spawn_on_agent>(c.on_tick(time_point{17s})).empty());
}

TEST_CASE("below min_replicas the survivors wait for a replacement and roll back with it") {
  elastic_settings s = four_replicas();
  s.replicas = 2;
  s.min_replicas = 2;
  s.max_replicas = 2;
  elastic_core c(s);
  auto acts = c.on_agent({"solo", "rack1", "sw1", 2, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts)) c.on_rank_ready(ready(sp.name, sp.node), time_point{1s});
  REQUIRE(c.world() == 2);
  auto down = c.on_rank_down("rank-1", "killed", time_point{10s});
  CHECK(has_event(down, "recovery_waiting"));
  CHECK(all_of<send_plan>(down).empty());
  const auto spawns = all_of<spawn_on_agent>(down);
  REQUIRE(spawns.size() == 1);
  auto back = c.on_rank_ready(ready(spawns[0].name, "solo"), time_point{11s});
  const auto plans = all_of<send_plan>(back);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.members == std::vector<std::string>{"rank-0", spawns[0].name});
  CHECK(plans[0].plan.source == msg::state_source::checkpoint);
  CHECK(has_event(c.on_step(5, 2, time_point{12s}), "recovered"));
}

TEST_CASE("replacements that keep dying before they join end the job after max_recoveries, not a spawn loop") {
  elastic_settings s = four_replicas();
  s.replicas = 2;
  s.min_replicas = 2;
  s.max_replicas = 2;
  s.max_recoveries = 3;
  elastic_core c(s);
  auto acts = c.on_agent({"solo", "rack1", "sw1", 2, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts)) c.on_rank_ready(ready(sp.name, sp.node), time_point{1s});
  REQUIRE(c.world() == 2);
  auto out = c.on_rank_down("rank-1", "killed", time_point{10s});
  REQUIRE(has_event(out, "recovery_waiting"));
  int spawned = 0;
  bool ended = false;
  for (int i = 0; i < 20 && !ended; ++i) {
    const auto spawns = all_of<spawn_on_agent>(out);
    if (spawns.empty()) break;
    spawned += int(spawns.size());
    // Each replacement dies at start (a process that crashes before it is ready).
    out = c.on_rank_down(spawns[0].name, "exited with status 1 without leaving", time_point{11s + std::chrono::seconds(i)});
    ended = !all_of<finish_job>(out).empty();
  }
  REQUIRE(ended);
  CHECK(spawned == 4);  // the first replacement and max_recoveries more
  const auto end = all_of<finish_job>(out).at(0);
  CHECK_FALSE(end.ok);
  CHECK(end.reason.find("replacement ranks were lost before they could join") != std::string::npos);
  CHECK(c.recoveries() == 1);
}

TEST_CASE("replacements that join a rollback plan and die before its first step end the job after a bound") {
  elastic_settings s = four_replicas();
  s.replicas = 2;
  s.min_replicas = 2;
  s.max_replicas = 2;
  s.max_recoveries = 3;
  elastic_core c(s);
  auto acts = c.on_agent({"solo", "rack1", "sw1", 2, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts)) c.on_rank_ready(ready(sp.name, sp.node), time_point{1s});
  REQUIRE(c.world() == 2);
  c.on_step(5, 2, time_point{5s});
  auto out = c.on_rank_down("rank-1", "killed", time_point{10s});
  int losses = 0;
  bool ended = false;
  for (int i = 0; i < 40 && !ended; ++i) {
    // Every replacement gets ready and joins the rollback plan, then dies before its first step.
    for (const auto& sp : all_of<spawn_on_agent>(out)) out = c.on_rank_ready(ready(sp.name, sp.node), time_point{11s});
    const auto plans = all_of<send_plan>(out);
    INFO("round " << i << ": " << out.size() << " actions");
    REQUIRE(!plans.empty());
    const auto& members = plans.back().plan.members;
    const auto victim = std::find_if(members.begin(), members.end(), [](const std::string& n) { return n != "rank-0"; });
    if (victim == members.end()) break;
    out = c.on_rank_down(*victim, "exited with status 1 without leaving", time_point{12s + std::chrono::seconds(i)});
    ++losses;
    ended = !all_of<finish_job>(out).empty();
  }
  REQUIRE(ended);
  CHECK(losses <= s.max_replicas + s.max_recoveries + 1);
  CHECK(all_of<finish_job>(out).at(0).reason.find("gave up") != std::string::npos);
}

TEST_CASE("without a free slot a job below min_replicas fails with the reason") {
  elastic_settings s = four_replicas();
  s.replicas = 2;
  s.min_replicas = 2;
  s.max_replicas = 2;
  elastic_core c(s);
  auto acts = c.on_agent({"n1", "rack1", "sw1", 1, true}, time_point{0s});
  acts = c.on_agent({"n2", "rack1", "sw1", 1, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts)) c.on_rank_ready(ready(sp.name, sp.node), time_point{1s});
  REQUIRE(c.world() == 2);
  auto gone = c.on_agent_down("n2", "no heartbeat for 30 s", time_point{10s});
  const auto fin = all_of<finish_job>(gone);
  REQUIRE(fin.size() == 1);
  CHECK_FALSE(fin[0].ok);
  CHECK_FALSE(fin[0].stopped);
  CHECK(fin[0].reason.find("min_replicas 2") != std::string::npos);
  // The event names the node it is about.
  bool named = false;
  for (const auto& e : all_of<journal_event>(gone)) named = named || (e.kind == "agent_down" && e.node == "n2");
  CHECK(named);
  for (const auto& e : all_of<journal_event>(gone))
    if (e.kind == "rank_down") CHECK((!e.rank.empty() && e.node == "n2"));
}

TEST_CASE("a stall in the epoch a scale-down is leaving rolls back at once") {
  std::vector<action> acts;
  auto c = running_job(acts);
  REQUIRE(c.scale_to(2, 60s, time_point{20s}).ok);
  const auto stayer = c.members().begin()->first;
  auto r = c.on_rank_stalled({stayer, 1, 30, "peer rank-3 is down"}, time_point{21s});
  const auto plans = all_of<send_plan>(r);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.source == msg::state_source::checkpoint);
  CHECK(plans[0].plan.members.size() == 2);
}

TEST_CASE("a node a scale-down empties is idle, and once released no rank is placed there again") {
  std::vector<action> acts;
  auto c = running_job(acts, 2);  // two ranks on n1, two on n2
  CHECK(c.idle_nodes().empty());
  c.on_step(10, 4, time_point{10s});
  REQUIRE(c.scale_to(2, 0s, time_point{11s}).ok);
  CHECK(c.idle_nodes().empty());  // not while the change is under way
  for (const auto& [n, m] : c.members())
    if (m.state == member_state::leaving) c.on_rank_left({n, 2, 11, "decommissioned", 0}, time_point{13s});
  c.on_step(11, 4, time_point{13s});
  c.on_step(12, 2, time_point{14s});
  REQUIRE(c.world() == 2);
  std::vector<std::string> empty_nodes;
  for (const auto& [node, a] : c.agents()) {
    bool holds = false;
    for (const auto& [n, m] : c.members())
      holds = holds || (m.node == node && m.state != member_state::left && m.state != member_state::dead);
    if (!holds) empty_nodes.push_back(node);
  }
  REQUIRE(empty_nodes.size() == 1);
  CHECK(c.idle_nodes() == empty_nodes);
  const auto released = c.on_agent_released(empty_nodes[0]);
  CHECK(has_event(released, "agent_released"));
  CHECK(c.idle_nodes().empty());
  CHECK(c.on_agent_released(empty_nodes[0]).empty());  // once
  // Its agent's end later is no failure; a scale-up places only on the nodes still held.
  CHECK(c.on_agent_down(empty_nodes[0], "its Slurm task ended", time_point{15s}).empty());
  const auto up = c.scale_up(4, time_point{16s});
  for (const auto& s : all_of<spawn_on_agent>(up.actions)) CHECK(s.node != empty_nodes[0]);
}

TEST_CASE("the first ranks wait for every expected agent, so placement sees all the racks") {
  auto s = small_job(2, 1, 2);
  s.expected_agents = 3;
  s.agent_gather = 10s;
  elastic_core c(s);
  // n1 and n2 alone could hold the group, but n3 shares n1's rack.
  CHECK(all_of<spawn_on_agent>(c.on_agent({"n1", "s1", "top", 1, true}, time_point{0s})).empty());
  CHECK(all_of<spawn_on_agent>(c.on_agent({"n2", "s2", "top", 1, true}, time_point{1s})).empty());
  const auto spawns = all_of<spawn_on_agent>(c.on_agent({"n3", "s1", "top", 1, true}, time_point{2s}));
  REQUIRE(spawns.size() == 2);
  CHECK(spawns[0].node == "n1");
  CHECK(spawns[1].node == "n3");

  // An expected agent that never comes: after agent_gather the ranks go where there is room.
  elastic_core late(s);
  late.on_agent({"n1", "s1", "top", 1, true}, time_point{0s});
  late.on_agent({"n2", "s2", "top", 1, true}, time_point{1s});
  CHECK(all_of<spawn_on_agent>(late.on_tick(time_point{9s})).empty());
  const auto acts = late.on_tick(time_point{11s});
  CHECK(all_of<spawn_on_agent>(acts).size() == 2);
  CHECK(has_event(acts, "placement_partial"));
}

TEST_CASE("fewer slots than replicas: after agent_gather the job starts on the largest world the slots allow, not never") {
  auto s = small_job(2, 1, 2);  // 2 replicas, min_replicas 1
  s.expected_agents = 2;
  s.agent_gather = 10s;
  elastic_core c(s);
  // node-b's agent died before it joined: one slot for a target of 2.
  CHECK(all_of<spawn_on_agent>(c.on_agent({"node-a", "r1", "top", 1, true}, time_point{0s})).empty());
  CHECK(all_of<spawn_on_agent>(c.on_tick(time_point{9s})).empty());
  const auto acts = c.on_tick(time_point{11s});
  const auto spawns = all_of<spawn_on_agent>(acts);
  REQUIRE(spawns.size() == 1);
  CHECK(has_event(acts, "placement_partial"));
  const auto started = c.on_rank_ready(ready(spawns[0].name, "node-a"), time_point{12s});
  REQUIRE(all_of<send_plan>(started).size() == 1);
  CHECK(c.world() == 1);
  // Below min_replicas there is nothing to start on: it keeps waiting for agents.
  auto strict = small_job(2, 2, 2);
  strict.expected_agents = 2;
  strict.agent_gather = 10s;
  elastic_core w(strict);
  w.on_agent({"node-a", "r1", "top", 1, true}, time_point{0s});
  CHECK(all_of<spawn_on_agent>(w.on_tick(time_point{30s})).empty());
}
