// A job stopped under msomni job stays known to msomni-sched as stopped and resumable, with
// real processes (msomni-sched, msomni job, msomni-run on the quickstart config): `msomni stop`
// ends the run mid-way with a final checkpoint, sched-status (text and --json) lists the job
// as stopped with that step, the same msomni job run again resumes from it and finishes, and
// then nothing is listed as stopped any more.
#include "core/child_process.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using msomni::child_process;
using msomni::testing::json;
using msomni::testing::parse_json;
using msomni::testing::read_json_lines;
using msomni::testing::run_command;
using msomni::testing::temp_dir;

namespace {

std::string cli(const std::string& args) { return std::string(MSOMNI_CLI_BINARY) + " " + args; }

size_t lines_in(const std::filesystem::path& metrics) {
  return std::filesystem::exists(metrics) ? read_json_lines(metrics).size() : 0;
}

}  // namespace

TEST_CASE("msomni job: a run stopped with msomni stop is listed as stopped and the same job run again resumes from its checkpoint") {
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);  // for the job's command
  const std::string info = (dir.path() / "info").string();
  child_process sched(MSOMNI_SCHED_BINARY, {"--gpus", "8", "--info-file", info});
  REQUIRE_MESSAGE(sched.read_until("msomni-sched: 8 GPUs", 20s), sched.log);
  const auto run_dir = dir.path() / "run";
  const int steps = 240;
  const std::vector<std::string> job_args{
      "job", "--scheduler-info", info, "--id", "train", "--class", "regular", "--gpus", "8", "--run-dir",
      run_dir.string(), "--", MSOMNI_RUN_BINARY, std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml", "--set",
      "training.steps=" + std::to_string(steps), "--run-dir", run_dir.string()};

  // Stopped mid-run: a final checkpoint, exit 5, and the scheduler is told the step.
  child_process first(MSOMNI_CLI_BINARY, job_args);
  REQUIRE_MESSAGE(first.read_until("msomni job train: started", 20s), first.log);
  for (int i = 0; i < 1200 && lines_in(run_dir / "metrics.jsonl") < 10; ++i) std::this_thread::sleep_for(50ms);
  const auto stop = run_command(cli("stop --run-dir " + run_dir.string()));
  REQUIRE_MESSAGE(stop.exit_code == 0, stop.output);
  const auto said = first.read_until("msomni job train: stopped (not finished): resumable from checkpoint step ", 120s);
  REQUIRE_MESSAGE(said, first.log);
  CHECK(first.wait(10s) == 5);
  const std::string marker = "checkpoint step ";
  const uint64_t step = std::stoull(said->substr(said->find(marker) + marker.size()));
  CAPTURE(step);
  REQUIRE(step > 0);
  REQUIRE(step < static_cast<uint64_t>(steps));

  // sched-status lists it as stopped with the step it resumes from; its GPUs are free.
  const auto table = run_command(cli("sched-status --scheduler-info " + info));
  CAPTURE(table.output);
  CHECK(table.exit_code == 0);
  CHECK(table.output.find("GPUs 8 free of 8") != std::string::npos);
  CHECK(table.output.find("ended   1 kept of 256 (finished 0, failed 0, stopped 1, lost 0)") != std::string::npos);
  CHECK(table.output.find("\nSTOPPED (resumable: run the same msomni job again)\n") != std::string::npos);
  CHECK(table.output.find("\ntrain                regular      step " + std::to_string(step) + " ") != std::string::npos);
  const auto stopped = parse_json(run_command(cli("sched-status --json --scheduler-info " + info)).output);
  REQUIRE(stopped.at("stopped").size() == 1);
  CHECK(stopped.at("stopped")[0].at("job") == "train");
  CHECK(stopped.at("stopped")[0].at("class") == "regular");
  CHECK(stopped.at("stopped")[0].at("resume_step") == step);
  CHECK(stopped.at("stopped")[0].at("ago_s").get<double>() >= 0);
  CHECK(stopped.at("ended").empty());
  CHECK(stopped.at("ended_kept") == 1);
  CHECK(stopped.at("ended_capacity") == 256);
  CHECK(stopped.at("jobs").empty());

  // The same msomni job again: it resumes from that step and runs to the end.
  child_process second(MSOMNI_CLI_BINARY, job_args);
  const auto resumed = second.read_until("msomni job train: resumes from checkpoint step ", 20s);
  REQUIRE_MESSAGE(resumed, second.log);
  CHECK(*resumed == "msomni job train: resumes from checkpoint step " + std::to_string(step));  // the scheduler's step
  REQUIRE_MESSAGE(second.read_until("msomni job train: finished", 300s), second.log);
  CHECK(second.wait(10s) == 0);
  const auto events = read_json_lines(run_dir / "events.jsonl");
  CHECK(msomni::testing::has_reason_containing(events, "warmed up with checkpoint step " + std::to_string(step)));
  // Every step once: the steps up to the checkpoint were not trained again.
  const auto records = read_json_lines(run_dir / "metrics.jsonl");
  size_t up_to_step = 0;
  std::set<uint64_t> seen;
  for (const auto& r : records) {
    const auto s = r.at("step").get<uint64_t>();
    seen.insert(s);
    up_to_step += s <= step ? 1 : 0;
  }
  CHECK(up_to_step == step);
  CHECK(seen.size() == static_cast<size_t>(steps));
  CHECK(*seen.rbegin() == static_cast<uint64_t>(steps));

  // No longer stopped: it finished.
  const auto after = parse_json(run_command(cli("sched-status --json --scheduler-info " + info)).output);
  CHECK(after.at("stopped").empty());
  REQUIRE(after.at("ended").size() == 1);
  CHECK(after.at("ended")[0].at("job") == "train");
  CHECK(after.at("ended")[0].at("end") == "finished");
  CHECK(after.at("ended")[0].at("exit_code") == 0);
  const auto after_table = run_command(cli("sched-status --scheduler-info " + info));
  CHECK(after_table.output.find("STOPPED") == std::string::npos);
  CHECK(after_table.output.find("ended   1 kept of 256 (finished 1, failed 0, stopped 0, lost 0)") != std::string::npos);

  ::kill(sched.pid(), SIGTERM);
  CHECK(sched.read_until("msomni-sched: stopped", 10s));
  CHECK(sched.wait(10s) == 0);
}

// msomni job gives the command the signal it was interrupted with: Ctrl-C's SIGINT.
TEST_CASE("msomni job interrupted with Ctrl-C: msomni-run stops with a checkpoint and the job is listed as stopped, not lost") {
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  const std::string info = (dir.path() / "info").string();
  child_process sched(MSOMNI_SCHED_BINARY, {"--gpus", "8", "--info-file", info});
  REQUIRE_MESSAGE(sched.read_until("msomni-sched: 8 GPUs", 20s), sched.log);
  const auto run_dir = dir.path() / "run";
  child_process job(MSOMNI_CLI_BINARY,
                    {"job", "--scheduler-info", info, "--id", "train", "--gpus", "8", "--run-dir", run_dir.string(), "--",
                     MSOMNI_RUN_BINARY, std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml", "--set",
                     "training.steps=100000", "--run-dir", run_dir.string()});
  REQUIRE_MESSAGE(job.read_until("msomni job train: started", 20s), job.log);
  for (int i = 0; i < 1200 && lines_in(run_dir / "metrics.jsonl") < 10; ++i) std::this_thread::sleep_for(50ms);
  ::kill(job.pid(), SIGINT);
  const auto said = job.read_until("msomni job train: interrupted; stopped (not finished): resumable from checkpoint step ", 60s);
  REQUIRE_MESSAGE(said, job.log);
  const int code = job.wait(10s);
  CHECK(code == 5);  // msomni-run's "stopped": a person's SIGINT, not a manager's SIGTERM
  const std::string marker = "checkpoint step ";
  const uint64_t step = std::stoull(said->substr(said->find(marker) + marker.size()));
  CHECK(step >= 10);
  const auto status = parse_json(run_command(cli("sched-status --json --scheduler-info " + info)).output);
  REQUIRE(status.at("stopped").size() == 1);
  CHECK(status.at("stopped")[0].at("job") == "train");
  CHECK(status.at("stopped")[0].at("resume_step") == step);
  CHECK(status.at("ended").empty());
  CHECK(status.at("gpus_free") == 8);
  ::kill(sched.pid(), SIGTERM);
  CHECK(sched.read_until("msomni-sched: stopped", 10s));
  CHECK(sched.wait(10s) == 0);
}
