// The memory fit decisions a run keeps for its resumes: per slot and step, read back from the
// "memory_fit" events they were journaled as, a torn line skipped.
#include "memory_fit_replay.hpp"

#include <doctest/doctest.h>

#include <sstream>

using namespace msomni;
using orchestrator::memory_fit_replay;

namespace {

msg::memory_fit fit(uint64_t step, uint32_t rank, uint32_t world) {
  msg::memory_fit f;
  f.rank_name = "rank-" + std::to_string(rank);
  f.rank = rank;
  f.world_size = world;
  f.step = step;
  f.forecast_bytes = 1.5e7 + static_cast<double>(step);
  f.budget_bytes = 1.2e7;
  f.batch = {1, 1, 2, 16, 32, 70, 56, 4};
  return f;
}

// An events.jsonl line as run_journal writes it for a memory_fit_done.
std::string event_line(const msg::memory_fit_done& d) {
  nlohmann::ordered_json line{{"time_ms", 1}, {"event", "memory_fit"}, {"reason", "r"}, {"kind", "memory_fit"},
                              {"step", d.fit.step}, {"epoch", d.epoch}, {"rank", d.fit.rank_name}};
  const auto fields = orchestrator::memory_fit_fields(d);  // items() of a temporary would dangle
  for (const auto& [k, v] : fields.items()) line[k] = v;
  line["attempt"] = 1;
  return line.dump() + "\n";
}

}  // namespace

TEST_CASE("decisions are kept per slot and step, and replayed after the checkpoint in step order") {
  memory_fit_replay r(100);
  r.record(fit(12, 0, 2));
  r.record(fit(7, 0, 2));
  r.record(fit(9, 1, 2));  // another rank
  r.record(fit(8, 0, 4));  // another world size
  r.record(fit(3, 0, 2));  // before the checkpoint
  const auto out = r.for_slot(0, 2, 5, 10);
  REQUIRE(out.size() == 2);
  CHECK(out[0].step == 7);
  CHECK(out[1].step == 12);
  CHECK(out[0].replay);
  CHECK(r.for_slot(0, 2, 5, 1).size() == 1);  // at most max
  CHECK(r.for_slot(1, 2, 0, 10).size() == 1);
  CHECK(r.for_slot(0, 4, 0, 10).size() == 1);
}

TEST_CASE("the replay is bounded: the oldest steps go first") {
  memory_fit_replay r(3);
  for (uint64_t s = 1; s <= 5; ++s) r.record(fit(s, 0, 1));
  CHECK(r.size() == 3);
  const auto out = r.for_slot(0, 1, 0, 10);
  REQUIRE(out.size() == 3);
  CHECK(out.front().step == 3);
}

TEST_CASE("the journal's memory_fit events read back as the decisions, other and torn lines skipped") {
  msg::memory_fit_done d;
  d.fit = fit(21, 1, 2);
  d.epoch = 3;
  d.parts = 2;
  d.micro_batches_split = 1;
  d.peak_bytes = 11'000'000;
  d.detail = "2 parts (3+1 samples)";
  std::string text = "{\"event\":\"attempt_started\",\"kind\":\"attempt_started\",\"step\":0}\n" + event_line(d);
  msg::memory_fit_done e = d;
  e.fit = fit(22, 1, 2);
  text += event_line(e).substr(0, 40);  // torn: the journal was cut off mid-line
  std::istringstream in(text);
  uint64_t skipped = 0;
  const auto r = memory_fit_replay::from_events(in, 100, skipped);
  CHECK(skipped == 1);
  const auto out = r.for_slot(1, 2, 0, 10);
  REQUIRE(out.size() == 1);
  auto want = d.fit;
  want.replay = true;
  CHECK(out[0] == want);
}
