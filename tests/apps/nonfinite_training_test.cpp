// Non-finite training with real processes: a model whose loss turns NaN at a fixed step
// (the test plugin "bigram-diverging") makes the job journal every non-finite step, roll
// back once to the last checkpoint, meet the divergence again and stop with the reason and
// exit 1. No non-finite state is ever checkpointed, the last good checkpoint stays, and the
// metrics write the NaN as null with its "loss_nonfinite" flag and a "nonfinite" note, never
// as a number.
#include "core/json_number.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using msomni::testing::events_named;
using msomni::testing::has_event;
using msomni::testing::has_reason_containing;
using msomni::testing::json;
using msomni::testing::read_json_lines;
using msomni::testing::reason_of;

namespace {

std::string diverging_job() {
  return "[job]\nname = \"diverging\"\n"
         "[model]\nname = \"bigram-diverging\"\nplugin = \"" + std::string(MSOMNI_TEST_PLUGIN) +
         "\"\nd_model = 16\n"
         "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = 2\nsteps = 400\nlr = 1e-3\nseed = 5\n"
         "max_nonfinite_steps = 3\n"
         "[elasticity]\nreplicas = 2\nmin_replicas = 1\nmax_replicas = 2\nheartbeat_interval_s = 0.2\n"
         "heartbeat_misses = 5\n[checkpoint]\ninterval_steps = 5\nkeep = 2\n";
}

}  // namespace

TEST_CASE("non-finite training rolls back once to the last finite checkpoint, then stops with the reason") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("job.toml", diverging_job());
  const auto run_dir = dir.path() / "run";
  const auto r = msomni::testing::run_command("MSOMNI_TEST_DIVERGE_AT_STEP=12 " + std::string(MSOMNI_RUN_BINARY) + " " +
                                              cfg + " --run-dir " + run_dir.string());
  CAPTURE(r.output);
  CHECK(r.exit_code == 1);
  CAPTURE(msomni::testing::read_text(run_dir / "events.jsonl"));
  const auto events = read_json_lines(run_dir / "events.jsonl");
  // Steps 13..15 diverge, the job rolls back to step 10 and steps 13..15 diverge again (the
  // ranks train on while the rollback is decided: records of those discarded steps are not
  // journaled, so the counts are exact however late the plan lands).
  const auto nonfinite_steps = events_named(events, "nonfinite_step");
  CHECK(nonfinite_steps.size() == 6);
  REQUIRE_FALSE(nonfinite_steps.empty());
  CHECK(reason_of(nonfinite_steps[0]) ==
        "step 13: loss nan, gradient norm nan; the optimizer skipped the update (1 in a row, limit 3)");
  CHECK(has_event(events, "training_rollback",
                  "3 non-finite steps in a row (steps 13..15); rolling back to the last checkpoint"));
  CHECK(has_event(events, "attempt_started", "attempt 2 resumes from step 10: rolled back from step 15"));
  CHECK(has_event(events, "training_diverged"));
  const auto failed = events_named(events, "job_failed");
  REQUIRE(failed.size() == 1);
  CHECK(reason_of(failed[0]).find("again after rolling back to the last checkpoint: training diverges; stopping") !=
        std::string::npos);
  CHECK(has_reason_containing(events, "skipped: the state of step 15 is not finite"));
  CHECK(r.output.find("6 non-finite steps (6 updates skipped), 0 loss spikes, 1 rollbacks for them") != std::string::npos);
  // The last finite checkpoint stays; nothing after the divergence was committed.
  CHECK(msomni::testing::read_text(run_dir / "checkpoints" / "latest") == "step-00000010\n");
  CHECK(fs::exists(run_dir / "checkpoints" / "step-00000010"));
  CHECK_FALSE(fs::exists(run_dir / "checkpoints" / "step-00000015"));
  // NaN is null with its flag and a note in metrics.jsonl, never a number: every line parses
  // with a strict JSON parser (read_json_lines throws on one that does not).
  const auto metrics = read_json_lines(run_dir / "metrics.jsonl");
  size_t nonfinite = 0;
  for (const auto& m : metrics) {
    CAPTURE(m.dump());
    if (!m.at("loss").is_null()) {
      CHECK(m.at("loss").is_number());
      CHECK(std::isfinite(m.at("loss").get<double>()));
      CHECK_FALSE(m.contains("loss_nonfinite"));
      continue;
    }
    ++nonfinite;
    CHECK(m.at("loss_nonfinite") == true);
    CHECK(std::isnan(msomni::get_number(m, "loss").value()));
    CHECK(m.at("grad_norm").is_null());
    CHECK(m.at("grad_norm_nonfinite") == true);
    CHECK(m.at("nonfinite") == json{{"loss", "nan"}, {"grad_norm", "nan"}});
    CHECK(m.at("optimizer_skipped") == true);
  }
  CHECK(nonfinite == 6);
}

TEST_CASE("a NaN loss leaves metrics.jsonl and the ranks' STEP lines strict JSON: null plus loss_nonfinite") {
  msomni::testing::temp_dir dir;
  const auto cfg = dir.write("job.toml", diverging_job());
  const auto run_dir = dir.path() / "run";
  const auto r = msomni::testing::run_command("MSOMNI_TEST_DIVERGE_AT_STEP=3 " + std::string(MSOMNI_RUN_BINARY) + " " +
                                              cfg + " --set training.steps=8 --set training.max_nonfinite_steps=100 --run-dir " +
                                              run_dir.string());
  CAPTURE(r.output);
  // Steps 4..8 are NaN; the guard never rolls back (its limit is above them).
  // Line by line through nlohmann's strict parser: a bare NaN or nan would throw here.
  const auto text = msomni::testing::read_text(run_dir / "metrics.jsonl");
  CAPTURE(text);
  size_t lines = 0, nan_lines = 0;
  for (const auto& m : read_json_lines(run_dir / "metrics.jsonl")) {
    ++lines;
    if (m.value("loss_nonfinite", false)) {
      ++nan_lines;
      CHECK(m.at("loss").is_null());
    } else {
      CHECK(m.at("loss").is_number());
    }
  }
  CHECK(lines == static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
  CHECK(lines == 8);
  CHECK(nan_lines == 5);
  // The ranks print the same encoding in their STEP lines.
  size_t nan_steps = 0;
  std::ifstream log(run_dir / "logs" / "rank-0.log");
  for (std::string line; std::getline(log, line);) {
    const auto step = msomni::testing::step_line_record(line);
    if (!step.is_object() || !step.value("loss_nonfinite", false)) continue;
    ++nan_steps;
    CHECK(step.at("loss").is_null());
  }
  CHECK(nan_steps == 5);
}
