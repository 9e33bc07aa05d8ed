// Adoption after a takeover: the ranks a dead leader left training are adopted as they run
// when their whole membership rejoins training within the window; anything less is refused
// once the window closes, and the job starts anew with names no earlier rank had.
#include "elastic_test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni;
using namespace msomni::orchestrator;
using namespace msomni::orchestrator::testing;
using namespace std::chrono_literals;

namespace {

elastic_settings takeover(nanos window) {
  auto s = small_job(2, 1, 4);
  s.adopt_window = window;
  s.epochs_before = 3;
  s.rank_ids_before = 5;
  return s;
}

msg::rank_rejoin rejoin(const std::string& name, uint32_t rank, uint64_t epoch, bool training, uint64_t step = 40) {
  return {name, "local", "127.0.0.1:" + std::to_string(6000 + rank), 900 + rank, epoch, {"rank-3", "rank-4"}, rank, step,
          training};
}

bool has_event(const std::vector<action>& acts, const std::string& kind) {
  for (const auto& e : all_of<journal_event>(acts))
    if (e.kind == kind) return true;
  return false;
}

}  // namespace

TEST_CASE("adoption: a whole membership rejoining training is adopted at its epoch, with no plan and no spawn") {
  elastic_core c(takeover(10s));
  CHECK(all_of<spawn_on_agent>(c.on_agent({"local", "rack0", "switch0", 4, true}, time_point{0s})).empty());
  const auto first = c.on_rank_rejoin(rejoin("rank-3", 0, 3, true, 41), time_point{1s});
  CHECK(has_event(first, "rank_rejoin"));
  CHECK(all_of<answer_rejoin>(first).empty());  // its peer has not asked yet
  const auto acts = c.on_rank_rejoin(rejoin("rank-4", 1, 3, true, 40), time_point{2s});
  CHECK(has_event(acts, "ranks_adopted"));
  const auto answers = all_of<answer_rejoin>(acts);
  REQUIRE(answers.size() == 2);
  for (const auto& a : answers) CHECK(a.adopted);
  CHECK(all_of<send_plan>(acts).empty());
  CHECK(all_of<spawn_on_agent>(acts).empty());
  CHECK(c.adopted());
  CHECK(c.epoch() == 3);
  CHECK(c.world() == 2);
  CHECK(c.last_step() == 41);
  CHECK(c.members().at("rank-3").pid == 900);
  // Nothing is placed when the window would have closed; the next change plans epoch 4.
  CHECK(all_of<spawn_on_agent>(c.on_tick(time_point{30s})).empty());
  const auto down = c.scale_down(1, 30s, time_point{31s});
  REQUIRE(down.ok);
  const auto plans = all_of<send_plan>(down.actions);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.epoch == 4);
  // A late rank of the dead leader is told to leave.
  const auto late = c.on_rank_rejoin(rejoin("rank-2", 0, 2, false), time_point{32s});
  const auto no = all_of<answer_rejoin>(late);
  REQUIRE(no.size() == 1);
  CHECK_FALSE(no[0].adopted);
}

TEST_CASE("adoption: a membership caught waiting for a plan is refused when the window closes, and new ranks take new names") {
  elastic_core c(takeover(10s));
  c.on_agent({"local", "rack0", "switch0", 4, true}, time_point{0s});
  CHECK(all_of<answer_rejoin>(c.on_rank_rejoin(rejoin("rank-3", 0, 3, false), time_point{1s})).empty());
  CHECK(all_of<answer_rejoin>(c.on_rank_rejoin(rejoin("rank-4", 1, 3, true), time_point{1s})).empty());
  CHECK(all_of<spawn_on_agent>(c.on_tick(time_point{9s})).empty());  // the window is open
  const auto acts = c.on_tick(time_point{10s});
  CHECK(has_event(acts, "adoption_window_closed"));
  const auto answers = all_of<answer_rejoin>(acts);
  REQUIRE(answers.size() == 2);
  for (const auto& a : answers) CHECK_FALSE(a.adopted);
  const auto spawns = all_of<spawn_on_agent>(acts);
  REQUIRE(spawns.size() == 2);
  CHECK(spawns[0].name == "rank-5");  // after every name an earlier leader used
  CHECK(spawns[1].name == "rank-6");
  CHECK_FALSE(c.adopted());
}

TEST_CASE("adoption: members at different epochs are not adopted, and without a window nobody is") {
  elastic_core c(takeover(10s));
  c.on_agent({"local", "rack0", "switch0", 4, true}, time_point{0s});
  c.on_rank_rejoin(rejoin("rank-3", 0, 3, true), time_point{1s});
  const auto acts = c.on_rank_rejoin(rejoin("rank-4", 1, 4, true), time_point{1s});
  CHECK_FALSE(has_event(acts, "ranks_adopted"));
  CHECK_FALSE(c.adopted());

  elastic_core plain(small_job(2, 1, 4));
  const auto spawned = plain.on_agent({"local", "rack0", "switch0", 4, true}, time_point{0s});
  CHECK(all_of<spawn_on_agent>(spawned).size() == 2);  // no window: placed at once, as before
  const auto refused = all_of<answer_rejoin>(plain.on_rank_rejoin(rejoin("rank-3", 0, 3, true), time_point{1s}));
  REQUIRE(refused.size() == 1);
  CHECK_FALSE(refused[0].adopted);
}
