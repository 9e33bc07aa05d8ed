// What msomni-run's control process sets up from the config (launch_plan.hpp): control.json,
// the ranks' command lines, and how the run's end maps to its state and exit code.
#include "launch_plan.hpp"

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::apps;

TEST_CASE("control.json names the store, job and follow limit only with a [control] store") {
  config::job_config cfg;
  cfg.job.name = "demo";
  auto j = control_file_json("10.0.0.1:4000", "tok", 42, "", cfg);
  CHECK(j.dump() == R"({"address":"10.0.0.1:4000","token":"tok","pid":42})");
  cfg.control.store = "file:///tmp/store";
  cfg.control.lease_ttl_s = 10;
  j = control_file_json("10.0.0.1:4000", "tok", 42, "10.0.0.1:9100", cfg);
  CHECK(j["metrics_address"] == "10.0.0.1:9100");
  CHECK(j["store"] == "file:///tmp/store");
  CHECK(j["job"] == "demo");
  CHECK(j["follow_limit_s"] == 60);
}

TEST_CASE("a rank's command line follows control.json and carries every override") {
  const rank_launch l{"/cfg/job.toml", "10.0.0.1:4000", "/ckpt", "/run/control.json", {"training.steps=5", "io.x=1"}};
  CHECK(rank_arguments(l, "rank-3") ==
        std::vector<std::string>{"/cfg/job.toml", "--name", "rank-3", "--control", "10.0.0.1:4000", "--ckpt-dir", "/ckpt",
                                 "--follow-control", "/run/control.json", "--set", "training.steps=5", "--set", "io.x=1"});
}

TEST_CASE("the run's end: state and exit code, as msomni-run --help lists them") {
  namespace o = orchestrator;
  CHECK(decide_run_end({}).state == "finished");
  CHECK(decide_run_end({}).exit_code == o::exit_finished);
  end_inputs failed;
  failed.ok = false;
  failed.reason = "rank-0 failed: 3 checkpoint saves failed in a row (after step 31)";
  CHECK(decide_run_end(failed).exit_code == 1);
  CHECK(decide_run_end(failed).reason == failed.reason);
  end_inputs stopped;
  stopped.stopped = true;
  CHECK(decide_run_end(stopped).exit_code == 5);
  stopped.preempted = true;
  CHECK(decide_run_end(stopped).state == "preempted");
  CHECK(decide_run_end(stopped).exit_code == 4);
  stopped.deposed = true;
  CHECK(decide_run_end(stopped).exit_code == 6);
  end_inputs preflight;
  preflight.ok = false;
  preflight.preflight_failed = true;
  CHECK(decide_run_end(preflight).exit_code == 3);
  end_inputs crashed;
  crashed.rank_crashes = {"rank-1 died by signal 11", "rank-2 died by signal 11"};
  const auto c = decide_run_end(crashed);
  CHECK(c.state == "failed");
  CHECK(c.reason == "every step was trained, but rank-1 died by signal 11 (and 1 more)");
  end_inputs journal;
  journal.journal_failed = true;
  journal.journal_failure = "events.jsonl: ENOSPC";
  CHECK(decide_run_end(journal).reason == "events.jsonl: ENOSPC");
}
