// Failures and their reasons: every recovery event says why, and a failure that a replacement
// rank repeats word for word ends the job at once with that reason instead of spending the
// remaining recoveries on more replacements that would fail the same way.
#include "elastic_test_support.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::orchestrator;
using namespace msomni::orchestrator::testing;
using namespace std::chrono_literals;

namespace {

msg::rank_ready ready(const std::string& name) { return {name, "solo", "127.0.0.1:" + std::to_string(5000 + name.size()), 100, false, 0}; }

// Two replicas (min 1) on one node with `slots` slots, both running.
elastic_core two_ranks(int64_t slots = 2, int64_t min_replicas = 1) {
  elastic_core c(small_job(2, min_replicas, 2));
  auto acts = c.on_agent({"solo", "rack1", "sw1", slots, true}, time_point{0s});
  for (const auto& sp : all_of<spawn_on_agent>(acts)) c.on_rank_ready(ready(sp.name), time_point{1s});
  REQUIRE(c.world() == 2);
  return c;
}

void check_reasons(const std::vector<action>& acts) {
  for (const auto& e : all_of<journal_event>(acts)) {
    CAPTURE(e.kind);
    CHECK_FALSE(e.detail.empty());
    CHECK(e.detail.rfind(";", 0) != 0);  // never a sentence without its subject
  }
}

}  // namespace

TEST_CASE("the recovery that completes once replacements are ready names what it recovers from") {
  auto c = two_ranks(2, 2);
  auto down = c.on_rank_down("rank-1", "process exited with code 1", time_point{10s});
  check_reasons(down);
  const auto spawns = all_of<spawn_on_agent>(down);
  REQUIRE(spawns.size() == 1);
  auto back = c.on_rank_ready(ready(spawns[0].name), time_point{11s});
  check_reasons(back);
  bool recovery = false;
  for (const auto& e : all_of<journal_event>(back))
    if (e.kind == "recovery") {
      recovery = true;
      CHECK(e.detail.find("rank-1") != std::string::npos);
      CHECK(e.detail.find("process exited with code 1") != std::string::npos);
    }
  CHECK(recovery);
  const auto plans = all_of<send_plan>(back);
  REQUIRE(plans.size() == 1);
  CHECK(plans[0].plan.reason.find("rank-1") != std::string::npos);
}

TEST_CASE("a replacement that fails with an earlier rank's words ends the job at once with them") {
  auto c = two_ranks();
  const std::string why = "data source 'img': 10000 bad samples in a row (first a.tar/000: corrupt_image)";
  // rank-1 fails: an ordinary recovery (rank-0 goes on, a replacement starts).
  auto first = c.on_rank_failed({"rank-1", 1, 0, why}, time_point{10s});
  check_reasons(first);
  CHECK(all_of<finish_job>(first).empty());
  const auto spawns = all_of<spawn_on_agent>(first);
  REQUIRE(spawns.size() == 1);
  bool named = false;
  for (const auto& e : all_of<journal_event>(first)) named = named || (e.kind == "recovery" && e.detail.find(why) != std::string::npos);
  CHECK(named);  // the rank's own words, not an exit status
  // rank-0 fails alike before the replacement is ready: it was no replacement, so it recovers.
  auto second = c.on_rank_failed({"rank-0", 2, 0, why}, time_point{11s});
  check_reasons(second);
  CHECK(all_of<finish_job>(second).empty());
  check_reasons(c.on_rank_ready(ready(spawns[0].name), time_point{12s}));
  // The replacement repeats it: the job ends now, with the reason, and nothing more starts.
  auto third = c.on_rank_failed({spawns[0].name, 3, 0, why}, time_point{13s});
  check_reasons(third);
  const auto fin = all_of<finish_job>(third);
  REQUIRE(fin.size() == 1);
  CHECK_FALSE(fin[0].ok);
  CHECK(fin[0].reason.find(why) != std::string::npos);
  CHECK(fin[0].reason.find("again") != std::string::npos);
  CHECK(all_of<spawn_on_agent>(third).empty());
  CHECK(c.finished());
  // Reports after the end change nothing (idempotent).
  CHECK(c.on_rank_failed({spawns[0].name, 3, 0, why}, time_point{14s}).empty());
}

TEST_CASE("different reasons, or the same one from ranks that are no replacements, are recovered from") {
  auto c = two_ranks();
  auto a = c.on_rank_failed({"rank-1", 1, 5, "disk full while reading shard a.tar"}, time_point{10s});
  const auto spawns = all_of<spawn_on_agent>(a);
  REQUIRE(spawns.size() == 1);
  c.on_rank_ready(ready(spawns[0].name), time_point{11s});
  // The replacement fails for another reason: not a repeat, so the job recovers again.
  auto b = c.on_rank_failed({spawns[0].name, 2, 5, "out of memory"}, time_point{12s});
  CHECK(all_of<finish_job>(b).empty());
  CHECK_FALSE(c.finished());
  // The same rank reporting twice counts once.
  CHECK(c.on_rank_failed({spawns[0].name, 2, 5, "out of memory"}, time_point{13s}).empty());
}

TEST_CASE("an exit without the rank's words is recovered from and never counts as a repeat") {
  auto c = two_ranks();
  auto a = c.on_rank_down("rank-1", "exited with status 1 without leaving", time_point{10s});
  const auto spawns = all_of<spawn_on_agent>(a);
  REQUIRE(spawns.size() == 1);
  c.on_rank_ready(ready(spawns[0].name), time_point{11s});
  auto b = c.on_rank_down(spawns[0].name, "exited with status 1 without leaving", time_point{12s});
  check_reasons(b);
  CHECK(all_of<finish_job>(b).empty());
}

TEST_CASE("failure_history keeps the first rank per reason, within its bound") {
  failure_history h;
  h.record("rank-0", "x");
  h.record("rank-1", "x");
  CHECK(h.repeat_of("rank-2", "x", true) == std::optional<std::string>("rank-0"));
  CHECK_FALSE(h.repeat_of("rank-2", "x", false));
  CHECK_FALSE(h.repeat_of("rank-0", "x", true));  // its own report again
  CHECK_FALSE(h.repeat_of("rank-2", "y", true));
  for (size_t i = 0; i < 2 * failure_history::reasons_max; ++i) h.record("r", "reason " + std::to_string(i));
  CHECK(h.size() == failure_history::reasons_max);
}
