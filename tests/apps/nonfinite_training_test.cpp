// Non-finite training with real processes: a model whose loss turns NaN at a fixed step
// (the test plugin "bigram-diverging") makes the job journal every non-finite step, roll
// back once to the last checkpoint, meet the divergence again and stop with the reason and
// exit 1. No non-finite state is ever checkpointed, the last good checkpoint stays, and the
// metrics write the NaN as null with a "nonfinite" note, never as a number.
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>

namespace fs = std::filesystem;

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

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
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
  const auto events = msomni::testing::read_text(run_dir / "events.jsonl");
  CAPTURE(events);
  // Steps 13..15 diverge, the job rolls back to step 10 and steps 13..15 diverge again (the
  // ranks train on while the rollback is decided: records of those discarded steps are not
  // journaled, so the counts are exact however late the plan lands).
  CHECK(count_of(events, "\"event\":\"nonfinite_step\"") == 6);
  CHECK(events.find("\"reason\":\"step 13: loss nan, gradient norm nan; the optimizer skipped the update (1 in a row, "
                    "limit 3)\"") != std::string::npos);
  CHECK(events.find("\"event\":\"training_rollback\",\"reason\":\"3 non-finite steps in a row (steps 13..15); "
                    "rolling back to the last checkpoint\"") != std::string::npos);
  CHECK(std::regex_search(events, std::regex("\"event\":\"attempt_started\",\"reason\":\"attempt 2 resumes from step 10: "
                                             "rolled back from step 15")));
  CHECK(events.find("\"event\":\"training_diverged\"") != std::string::npos);
  CHECK(std::regex_search(events, std::regex("\"event\":\"job_failed\",\"reason\":\"[^\"]*again after rolling back to "
                                             "the last checkpoint: training diverges; stopping")));
  CHECK(events.find("skipped: the state of step 15 is not finite") != std::string::npos);
  CHECK(r.output.find("6 non-finite steps (6 updates skipped), 0 loss spikes, 1 rollbacks for them") != std::string::npos);
  // The last finite checkpoint stays; nothing after the divergence was committed.
  CHECK(msomni::testing::read_text(run_dir / "checkpoints" / "latest") == "step-00000010\n");
  CHECK(fs::exists(run_dir / "checkpoints" / "step-00000010"));
  CHECK_FALSE(fs::exists(run_dir / "checkpoints" / "step-00000015"));
  // NaN is null with a note in metrics.jsonl, never a number.
  const auto metrics = msomni::testing::read_text(run_dir / "metrics.jsonl");
  CHECK(count_of(metrics, "\"loss\":null") == 6);
  CHECK(count_of(metrics, "\"nonfinite\":{\"loss\":\"nan\",\"grad_norm\":\"nan\"},\"optimizer_skipped\":true") == 6);
  CHECK(metrics.find("nan,") == std::string::npos);
  CHECK(metrics.find("\"loss\":-1") == std::string::npos);
}
