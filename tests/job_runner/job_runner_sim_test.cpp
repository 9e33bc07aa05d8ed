// msomni job's runner core under a seeded world (job_runner_sim.hpp): thousands of seeds of a
// simulated scheduler (drains, shrinks, grows, evictions, force releases, commands out of
// turn, crashes and restarts), a simulated command (failures, failed starts, SIGTERM ignored)
// and msomni-run's control endpoint. Every run must end, with no invariant broken; a failing
// seed is printed and replays exactly.
#include "job_runner_sim.hpp"
#include "support/sim_seeds.hpp"
#include "support/test_skip.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

using namespace msomni::job_runner;

namespace {

using msomni::testing::sim_seed_count;

// The first violation of seed `seed` run with `sabotage` applied to its options ("" if none).
template <class F>
std::string first_violation(uint64_t seed, F sabotage) {
  auto o = sim::seeded(seed);
  sabotage(o);
  const auto r = sim::run(o);
  return r.violations.empty() ? std::string() : r.violations.front();
}

// The first seed in 1..500 whose run with `sabotage` breaks a rule whose text holds `what`.
template <class F>
uint64_t first_seed_caught(const std::string& what, F sabotage) {
  for (uint64_t seed = 1; seed <= 500; ++seed)
    if (const auto v = first_violation(seed, sabotage); v.find(what) != std::string::npos) {
      MESSAGE("caught: " << v);
      return seed;
    }
  return 0;
}

}  // namespace

TEST_CASE("the runner core keeps every invariant under a seeded scheduler, command and control endpoint") {
  const uint64_t seeds = sim_seed_count();
  const auto began = std::chrono::steady_clock::now();
  std::map<std::string, uint64_t> outcomes;
  uint64_t broken = 0, launches = 0, crashes = 0, rejoins = 0, resubmits = 0, force_releases = 0, chaos = 0,
           term_ignored = 0, events = 0, ignored_term_ms = 0, in_place = 0;
  std::string first_broken;
  std::map<std::string, std::string> kinds;  // rule broken -> its first seed, + per seed
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    const auto r = sim::run(sim::seeded(seed));
    events += r.events;
    launches += r.launches;
    crashes += r.crashes;
    rejoins += r.rejoins;
    resubmits += r.resubmits;
    force_releases += r.force_releases;
    chaos += r.chaos;
    term_ignored += r.term_ignored;
    ignored_term_ms += r.ignored_term_ms;
    in_place += r.in_place;
    const std::string outcome = !r.ended ? "did not end"
                                : r.code == 0 ? "finished"
                                : r.why.rfind("rejected", 0) == 0 ? "rejected"
                                : r.why.find("scheduler went away") != std::string::npos ? "scheduler gone"
                                : "command failed";
    ++outcomes[outcome];
    if (r.violations.empty()) continue;
    if (broken++ == 0) first_broken = r.violations.front();
    // A failing run counts under its first rule broken, without its numbers (for a summary).
    const std::string& v = r.violations.front();
    std::string rule = v.substr(v.find("ms: ") + 4);
    rule = rule.substr(0, rule.find_first_of("0123456789(["));
    if (!kinds.count(rule)) kinds[rule] = "seed " + std::to_string(seed);
    kinds[rule] += " +";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::string counts;
  for (const auto& [k, n] : outcomes) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  MESSAGE(seeds << " seeds in " << secs << " s (" << events << " events): " << counts << "; " << launches
                << " launches, " << crashes << " scheduler crashes, " << rejoins << " rejoins, " << resubmits
                << " submissions again, " << force_releases << " force releases, " << chaos
                << " commands out of turn, " << in_place << " resized in place, " << term_ignored
                << " commands ignored SIGTERM (" << ignored_term_ms / 1000 / std::max<uint64_t>(term_ignored, 1)
                << " s on average until they ended); " << broken << " seeds broke a rule");
  for (const auto& [rule, seen] : kinds) MESSAGE("broken: " << rule << " (" << seen.substr(0, seen.find(' ', 5)) << ", "
                                                    << std::count(seen.begin(), seen.end(), '+') << " seeds)");
  INFO(first_broken);
  CHECK(broken == 0);
  CHECK(outcomes["finished"] > seeds / 2);  // faults are not so dense that most jobs fail
  CHECK(crashes > seeds / 10);
  CHECK(rejoins > 0);
  CHECK(resubmits > 0);
  CHECK(force_releases > 0);
  CHECK(in_place > 0);
}

TEST_CASE("the same seed replays exactly") {
  for (uint64_t seed : {7u, 123u, 4242u}) {
    const auto a = sim::run(sim::seeded(seed)), b = sim::run(sim::seeded(seed));
    CHECK(a.events == b.events);
    CHECK(a.why == b.why);
    CHECK(a.launches == b.launches);
    CHECK(a.violations == b.violations);
  }
}

TEST_CASE("a deliberately broken shell is caught: the command's end reported at SIGTERM") {
  const uint64_t seed =
      first_seed_caught("while the command it releases still runs", [](sim::options& o) { o.sabotage_end_at_sigterm = true; });
  CHECK(seed > 0);
  CHECK(first_violation(seed, [](sim::options&) {}).empty());  // the same seed unbroken is fine
}

TEST_CASE("a deliberately broken shell is caught: a killed command's end never reported") {
  const uint64_t seed = first_seed_caught("hang", [](sim::options& o) { o.sabotage_drop_killed_end = true; });
  CHECK(seed > 0);
  CHECK(first_violation(seed, [](sim::options&) {}).empty());
}

TEST_CASE("a deliberately broken shell is caught: an evicted command's kill timer never fires") {
  const uint64_t seed = first_seed_caught("an evicted command ran", [](sim::options& o) { o.sabotage_drop_stop_timer = true; });
  CHECK(seed > 0);
  CHECK(first_violation(seed, [](sim::options&) {}).empty());
}

TEST_CASE("without faults every seed finishes its command") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    auto o = sim::seeded(seed);
    o.disruptions = 0;
    o.chaos_chance = 0;
    o.crash_chance = 0;
    o.reject_chance = 0;
    o.fail_chance = 0;
    o.launch_fail_chance = 0;
    const auto r = sim::run(o);
    CAPTURE(seed);
    CHECK(r.violations.empty());
    CHECK(r.code == 0);
    CHECK(r.launches == 1);
  }
}

// MSOMNI_SIM_TRACE=SEED prints that seed's run (a debugging aid; reported as skipped otherwise).
TEST_CASE("trace of one runner seed, when asked for") {
  const auto seed = msomni::testing::sim_trace_seed();
  if (!seed) MSOMNI_SKIP_TEST("a debugging aid: set MSOMNI_SIM_TRACE=SEED to print that seed's run");
  auto o = sim::seeded(*seed);
  o.trace = true;
  const auto r = sim::run(o);
  for (const auto& line : r.trace) MESSAGE(line);
  for (const auto& v : r.violations) MESSAGE("VIOLATION " << v);
}
