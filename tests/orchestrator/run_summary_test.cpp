// run_summary: what summary.json and summary.txt say about a run from the records the
// orchestrator tallies (medians, losses, worlds, events, checkpoints) and how it ended.
#include "run_summary.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace msomni::orchestrator;

namespace {

metrics_record step(uint64_t n, double loss, uint32_t world, double tokens_per_s, double step_ms = 10) {
  metrics_record r;
  r.step = n;
  r.loss = loss;
  r.world_size = world;
  r.tokens_per_s = tokens_per_s;
  r.step_time_ms = step_ms;
  r.data_wait_ms = 1;
  return r;
}

run_end stopped_end() {
  run_end e;
  e.state = "stopped";
  e.exit_code = exit_stopped;
  e.reason = "stopped at step 4 with a final checkpoint";
  e.started_ms = 1000;
  e.ended_ms = 3500;
  e.attempt = 2;
  e.resume_step = 4;
  e.resume_checkpoint = "step-00000004";
  e.run_dir = "/r";
  e.checkpoint_dir = "/r/checkpoints";
  return e;
}

}  // namespace

TEST_CASE("the summary counts losses, medians, worlds, elastic events and checkpoints of the run") {
  run_tally t(10);
  t.on_step(step(1, 5.0, 2, 100));
  t.on_step(step(2, std::numeric_limits<double>::quiet_NaN(), 2, 300));  // a non-finite loss is not a first/last/min
  t.on_step(step(3, 2.0, 1, 200));
  t.on_step(step(4, 3.0, 1, 400));
  for (const char* kind : {"rank_down", "recovery", "recovered", "rank_down", "checkpoint", "control"}) t.on_event(kind);
  t.on_checkpoint(2, true);
  t.on_checkpoint(4, false);
  t.on_checkpoint(4, true);
  const auto f = t.facts(4, {{"corrupt_image", 3}}, 7, 1);
  CHECK(f.steps_recorded == 4);
  CHECK(*f.first_step == 1);
  CHECK(*f.loss_first == 5.0);
  CHECK(*f.loss_last == 3.0);
  CHECK(*f.loss_min == 2.0);
  CHECK(*f.tokens_per_s_median == 250.0);  // 100 200 300 400
  CHECK(f.world_sizes == std::vector<uint32_t>{1, 2});
  CHECK(f.elastic_events == std::map<std::string, uint64_t>{{"rank_down", 2}, {"recovered", 1}, {"recovery", 1}});
  CHECK(f.checkpoints_committed == 2);
  CHECK(f.checkpoint_failures == 1);
  CHECK(*f.last_checkpoint_step == 4);

  const auto j = nlohmann::json::parse(summary_json(f, stopped_end()).dump());
  CHECK(j.at("state") == "stopped");
  CHECK(j.at("exit_code") == 5);
  CHECK(j.at("steps") == nlohmann::json{{"done", 4}, {"total", 10}, {"recorded", 4}, {"first_this_run", 1}});
  CHECK(j.at("wall_s") == 2.5);
  CHECK(j.at("tokens_per_s_median") == 250.0);
  CHECK(j.at("loss") == nlohmann::json{{"first", 5.0}, {"last", 3.0}, {"min", 2.0}});
  CHECK(j.at("world_sizes") == nlohmann::json{1, 2});
  CHECK(j.at("elastic_events").at("rank_down") == 2);
  CHECK(j.at("checkpoints") == nlohmann::json{{"committed", 2}, {"failed", 1}, {"last_step", 4}});
  CHECK(j.at("resume") == nlohmann::json{{"step", 4}, {"checkpoint", "step-00000004"}});
  CHECK(j.at("bad_samples") == nlohmann::json{{"total", 3},
                                              {"by_reason", {{"corrupt_image", 3}}},
                                              {"samples", nlohmann::json::array()},
                                              {"unlisted_draws", 0}});
  CHECK(j.at("mismatched_names") == 0);
  CHECK(j.at("downgraded_samples") == 7);
  CHECK(j.at("slow_data_steps") == 1);

  const auto text = summary_text(f, stopped_end());
  CHECK(text.find("state         stopped (exit code 5)\n") == 0);
  CHECK(text.find("steps         4 / 10") != std::string::npos);
  CHECK(text.find("resume from   step 4 (step-00000004)\n") != std::string::npos);
  CHECK(text.find("elastic       rank_down 2, recovered 1, recovery 1\n") != std::string::npos);
  CHECK(text.find("bad samples   3: corrupt_image=3\n") != std::string::npos);

  // The samples behind the counts, each once with its draws, most drawn first.
  bad_sample_ledger ledger;
  const auto notes = ledger.on_seen({1, 3, {{"shard-000001.tar/cat", "corrupt_image", "a cut JPEG: no end-of-image marker", 1},
                                           {"shard-000002.tar/dog", "corrupt_image", "", 1}}});
  CHECK(notes.size() == 2);
  CHECK(notes[0] == "shard-000001.tar/cat: corrupt_image (a cut JPEG: no end-of-image marker), first drawn by rank 1 in step 3");
  CHECK(ledger.on_seen({0, 4, {{"shard-000002.tar/dog", "corrupt_image", "", 2}}}).empty());  // known: counted only
  auto listed = f;
  listed.bad_sample_list = ledger.entries();
  const auto lj = nlohmann::json::parse(summary_json(listed, stopped_end()).dump());
  REQUIRE(lj.at("bad_samples").at("samples").size() == 2);
  CHECK(lj.at("bad_samples").at("samples").at(0) == nlohmann::json{{"shard", "shard-000002.tar"}, {"key", "dog"},
                                                                     {"reason", "corrupt_image"}, {"cause", ""},
                                                                     {"draws", 3}, {"first_step", 3}, {"first_rank", 1}});
  const auto lt = summary_text(listed, stopped_end());
  CHECK(lt.find("shard-000002.tar/dog  corrupt_image x3\n") != std::string::npos);
  CHECK(lt.find("shard-000001.tar/cat  corrupt_image x1 (a cut JPEG: no end-of-image marker)\n") != std::string::npos);
}

TEST_CASE("the bad-sample listing is bounded: samples past it are counted as unlisted draws") {
  bad_sample_ledger ledger;
  msomni::msg::bad_samples_seen m{0, 1, {}};
  for (size_t i = 0; i < bad_sample_ledger::listed_max + 5; ++i)
    m.samples.push_back({"s.tar/k" + std::to_string(i), "missing_member", "no .txt caption member", 2});
  const auto notes = ledger.on_seen(m);
  CHECK(notes.size() == bad_sample_ledger::listed_max);
  CHECK(notes.back().find("the listing is full") != std::string::npos);
  CHECK(ledger.entries().size() == bad_sample_ledger::listed_max);
  CHECK(ledger.unlisted_draws() == 10);
  const auto lines = bad_sample_lines(ledger.entries(), ledger.unlisted_draws(), 8);
  CHECK(lines.size() == 10);
  CHECK(lines[8] == "... " + std::to_string(bad_sample_ledger::listed_max - 8) + " more samples listed in summary.json");
  CHECK(lines[9].find("10 draws of samples past the listing") != std::string::npos);
}

TEST_CASE("a run that recorded nothing has nulls, not zeros, for what it never measured") {
  run_tally t(10);
  run_end e;
  e.state = "failed";
  e.exit_code = exit_failed;
  const auto j = nlohmann::json::parse(summary_json(t.facts(0, {}, 0, 0), e).dump());
  CHECK(j.at("tokens_per_s_median").is_null());
  CHECK(j.at("loss").at("first").is_null());
  CHECK(j.at("checkpoints").at("last_step").is_null());
  CHECK(j.at("resume").at("step").is_null());
  CHECK(summary_text(t.facts(0, {}, 0, 0), e).find("resume from   no checkpoint") != std::string::npos);
}

TEST_CASE("the medians of a long run keep a bounded sample and stay the median") {
  run_tally t(1000000);
  const uint64_t n = 10 * run_tally::median_samples_max + 1;
  // Alternating slow and fast steps: a sample that kept only one kind would be far off.
  for (uint64_t i = 1; i <= n; ++i) t.on_step(step(i, 1.0, 1, static_cast<double>(i % 1000)));
  const auto f = t.facts(n, {}, 0, 0);
  REQUIRE(f.tokens_per_s_median);
  CHECK(std::abs(*f.tokens_per_s_median - 500.0) < 20.0);
  CHECK(f.steps_recorded == n);
}
