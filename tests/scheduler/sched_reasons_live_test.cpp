// msomni-sched explains itself with numbers, as real processes over UCX on loopback
// (msomni-sched, `msomni job`, `msomni sched-status`). A critical job whose step times vary
// lends nothing, and the hold says its confidence against min_confidence and that the
// step-time variance caps it; once its steps are steady a best-effort job is co-located, and
// the colocate says the idle share against idle_threshold and the confidence against
// min_confidence. Both are checked in msomni-sched's log (the journal) and in
// `msomni sched-status --json`, where the numbers come by name. And `msomni job` reports the
// step an opaque command last saved (its metrics.jsonl says it), or that it cannot know it.
#include "core/child_process.hpp"
#include "support/json_lines.hpp"
#include "support/process_runner.hpp"
#include "support/text_and_pids.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using msomni::child_process;
using msomni::testing::json;
using msomni::testing::parse_json;
using msomni::testing::read_text;
using msomni::testing::run_command;
using msomni::testing::temp_dir;

using msomni::testing::count_of;

namespace {

// msomni-sched on 8 GPUs with its info file in `dir`, with `policy` flags; waits until it listens.
std::unique_ptr<child_process> start_scheduler(const temp_dir& dir, const std::vector<std::string>& policy) {
  std::vector<std::string> args{"--gpus", "8", "--info-file", (dir.path() / "info").string()};
  args.insert(args.end(), policy.begin(), policy.end());
  auto sched = std::make_unique<child_process>(MSOMNI_SCHED_BINARY, args);
  REQUIRE_MESSAGE(sched->read_until("msomni-sched: 8 GPUs", 20s), "msomni-sched did not start: " << sched->log);
  return sched;
}

// Ends a process it started (SIGTERM) and reaps it; what it printed meanwhile stays in its log.
void stop(child_process& p, const std::string& last_line) {
  if (p.exited()) return;
  ::kill(p.pid(), SIGTERM);
  p.read_until(last_line, 15s);
  p.wait(15s);
}

json sched_status(const temp_dir& dir) {
  const auto r = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --json --scheduler-info " +
                             (dir.path() / "info").string());
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return parse_json(r.output);
}

// The status row of `job` (null when it is not listed).
json row_of(const json& status, const std::string& job) {
  for (const auto& row : status.at("jobs"))
    if (row.value("job", "") == job) return row;
  return json();
}

// The newest of the recent decisions of `kind` for `job` (null when there is none).
json decision_of(const json& status, const std::string& kind, const std::string& job) {
  json found;
  for (const auto& d : status.at("recent_decisions"))
    if (d.value("kind", "") == kind && d.value("job", "") == job) found = d;
  return found;
}

// The number `name` among an object's "figures"; NaN (every comparison fails) when missing.
double figure(const json& with_figures, const std::string& name) {
  if (!with_figures.is_object() || !with_figures.contains("figures")) return std::nan("");
  const auto& f = with_figures.at("figures");
  return f.contains(name) && f.at(name).is_number() ? f.at(name).get<double>() : std::nan("");
}

// Polls `ready` every 200 ms, up to 30 s; true once it holds.
bool within_30s(const std::function<bool()>& ready) {
  for (int i = 0; i < 150; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(200ms);
  }
  return ready();
}

// `steps` metrics.jsonl lines as msomni-run writes them: step times alternating between
// `short_ms` and `long_ms` (equal: steady), half of each step waiting for data.
std::string metrics_lines(int steps, double short_ms, double long_ms, int first = 1) {
  std::string lines;
  for (int i = 0; i < steps; ++i) {
    const double ms = i % 2 ? long_ms : short_ms;
    lines += json{{"step", first + i}, {"step_time_ms", ms}, {"data_wait_ms", ms / 2}}.dump() + "\n";
  }
  return lines;
}

// The next decision line of msomni-sched's log that contains `what` (earlier ones are kept in
// its log), within 30 s.
std::optional<std::string> next_decision_with(child_process& sched, const std::string& what) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < until) {
    const auto line = sched.read_until("decision ", 1s);
    if (line && line->find(what) != std::string::npos) return line;
  }
  return std::nullopt;
}

// A number the text shows after `label` (e.g. "idle_threshold "), parsed.
double number_after(const std::string& text, const std::string& label) {
  const auto at = text.find(label);
  REQUIRE_MESSAGE(at != std::string::npos, "no \"" << label << "\" in: " << text);
  return std::stod(text.substr(at + label.size()));
}

}  // namespace

TEST_CASE("msomni-sched over UCX: a hold and a co-location give the numbers they compared, in the log and in sched-status --json") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--reservation-window-s", "1"});
  const std::string info = (dir.path() / "info").string();
  const auto run_dir = dir.path() / "crit-run";
  std::filesystem::create_directories(run_dir);
  const auto go = dir.path() / "steady";
  // The critical job first reports 40 steps alternating 0.1 s and 1.9 s (step-time cv 0.9:
  // confidence 0.1 whatever the samples), then, once the test says so, 200 steady 1 s steps
  // (confidence 1), half of every step waiting for data (idle share 0.5).
  const std::string noisy = dir.write("noisy", metrics_lines(40, 100, 1900));
  const std::string steady = dir.write("steady-steps", metrics_lines(200, 1000, 1000, 41));
  const std::string metrics = (run_dir / "metrics.jsonl").string();
  child_process crit(MSOMNI_CLI_BINARY,
                     {"job", "--scheduler-info", info, "--id", "crit", "--class", "critical", "--gpus", "8", "--run-dir",
                      run_dir.string(), "--", "sh", "-c",
                      "cat " + noisy + " >> " + metrics + "; while [ ! -e " + go.string() + " ]; do sleep 0.1; done; cat " +
                          steady + " >> " + metrics + "; exec sleep 60"});
  REQUIRE_MESSAGE(crit.read_until("msomni job crit: started", 20s), crit.log);

  // Once a window has its forecast, sched-status says why it lends nothing, with the numbers.
  json status;
  REQUIRE_MESSAGE(within_30s([&] {
                    status = sched_status(dir);
                    return figure(row_of(status, "crit"), "samples") == 40;
                  }),
                  status.dump(2));
  const json crit_row = row_of(status, "crit");
  CHECK(crit_row.value("hold", "") == "low_confidence");
  CHECK(figure(crit_row, "confidence") < figure(crit_row, "min_confidence"));
  CHECK(figure(crit_row, "step_time_cv") == doctest::Approx(0.9));
  CHECK(figure(crit_row, "confidence_cap") == doctest::Approx(1 - figure(crit_row, "step_time_cv")));
  CHECK(figure(crit_row, "confidence_cap") < figure(crit_row, "min_confidence"));
  CHECK(crit_row.value("hold_detail", "").find("its step times vary too much") != std::string::npos);
  CHECK(crit_row.value("hold_detail", "").find("yet") == std::string::npos);
  CHECK(crit_row.at("lendable_share") == 0);

  // A best-effort job waits meanwhile (the critical job holds every GPU): the hold is logged.
  child_process be(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "be", "--class", "best-effort", "--gpus",
                                       "2", "--", "sh", "-c", "echo \"guest of $MSOMNI_JOB_HOST\"; exec sleep 60"});
  const auto hold = next_decision_with(*sched, " hold crit: low_confidence: ");
  REQUIRE_MESSAGE(hold, sched->log);
  CHECK(hold->find("crit's forecast confidence ") != std::string::npos);
  CHECK(hold->find("its step times vary too much (step-time cv ") != std::string::npos);
  const double logged_confidence = number_after(*hold, "forecast confidence ");
  CHECK(logged_confidence < number_after(*hold, "is under min_confidence "));
  CHECK(number_after(*hold, "step-time cv ") == doctest::Approx(0.9));
  CHECK(number_after(*hold, "caps the confidence at ") == doctest::Approx(1 - number_after(*hold, "step-time cv ")));

  // Steady steps: a following window co-locates the guest, and the log says why.
  std::ofstream(go) << "go\n";
  REQUIRE_MESSAGE(be.read_until("msomni job be: started as a guest of crit", 30s), be.log);
  const auto colocated = next_decision_with(*sched, " colocate be gpus=2: ");
  REQUIRE_MESSAGE(colocated, sched->log);
  CHECK(colocated->find(" colocate be gpus=2: host's predicted idle share passes the threshold: idle share ") !=
        std::string::npos);
  CHECK(number_after(*colocated, "threshold: idle share ") >= number_after(*colocated, "passes idle_threshold "));
  CHECK(number_after(*colocated, "; confidence ") >= number_after(*colocated, ">= min_confidence "));

  // sched-status --json: the guest's row and the colocate decision carry the same numbers by
  // name; the earlier hold is among the recent decisions with its own.
  status = sched_status(dir);
  const json be_row = row_of(status, "be");
  REQUIRE_MESSAGE(be_row.is_object(), status.dump(2));
  CHECK(be_row.value("phase", "") == "guest");
  CHECK(figure(be_row, "idle_share") >= figure(be_row, "idle_threshold"));
  CHECK(figure(be_row, "confidence") >= figure(be_row, "min_confidence"));
  CHECK(figure(be_row, "lent_share") == doctest::Approx(be_row.value("guest_share", -1.0)));
  CHECK(be_row.value("why", "").find("passes idle_threshold") != std::string::npos);
  const json placed = decision_of(status, "colocate", "be");
  REQUIRE_MESSAGE(placed.is_object(), status.dump(2));
  CHECK(figure(placed, "idle_share") >= figure(placed, "idle_threshold"));
  CHECK(figure(placed, "confidence") >= figure(placed, "min_confidence"));
  CHECK(figure(placed, "idle_share") == doctest::Approx(number_after(*colocated, "threshold: idle share ")));
  CHECK(figure(placed, "idle_threshold") == doctest::Approx(0.35));
  CHECK(placed.value("share", 0.0) == doctest::Approx(figure(placed, "lent_share")));
  const json held = decision_of(status, "hold", "crit");
  REQUIRE_MESSAGE(held.is_object(), status.dump(2));
  CHECK(figure(held, "confidence") < figure(held, "min_confidence"));
  CHECK(figure(held, "confidence") == doctest::Approx(logged_confidence).epsilon(0.01));
  // The critical host now lends: its row says why, with the numbers.
  const json lending = row_of(status, "crit");
  CHECK_FALSE(lending.contains("hold"));
  CHECK(figure(lending, "idle_share") >= figure(lending, "idle_threshold"));
  CHECK(figure(lending, "lent_share") == doctest::Approx(lending.value("lendable_share", -1.0)));
  // The text form gives them too.
  const auto text = run_command(std::string(MSOMNI_CLI_BINARY) + " sched-status --scheduler-info " + info);
  CHECK_MESSAGE(text.output.find("guest of crit (share ") != std::string::npos, text.output);
  CHECK_MESSAGE(text.output.find("passes idle_threshold 0.35") != std::string::npos, text.output);
  CHECK_MESSAGE(text.output.find("RECENT DECISIONS") != std::string::npos, text.output);

  stop(be, "msomni job be: interrupted");
  stop(crit, "msomni job crit: interrupted");
  stop(*sched, "msomni-sched: stopped");
}

TEST_CASE("msomni job over UCX: a preempted opaque command's checkpoint step is the one it last saved, or said to be unknown") {
  temp_dir dir;
  auto sched = start_scheduler(dir, {"--min-run-window-s", "0", "--drain-s", "20"});
  const std::string info = (dir.path() / "info").string();
  // Two regular jobs whose commands keep their checkpoints their own way. The first writes
  // metrics.jsonl lines to its --run-dir, the one after step 2013 with a checkpoint phase;
  // the second has no --run-dir. Each logs its starts with MSOMNI_RESUME_STEP; its first run
  // works until SIGTERM, the second ends at once.
  const auto run_dir = dir.path() / "opaque-run";
  std::filesystem::create_directories(run_dir);
  std::string lines;
  for (int step = 2000; step <= 2020; ++step)
    lines += json{{"step", step}, {"step_time_ms", 100.0}, {"data_wait_ms", 10.0},
                  {"checkpoint_ms", step == 2013 ? 900.0 : 0.0}}
                 .dump() +
             "\n";
  const std::string metrics = dir.write("opaque-metrics", lines);
  const auto starts = [&](const std::string& job) { return (dir.path() / (job + ".starts")).string(); };
  const auto command = [&](const std::string& job, const std::string& first_run) {
    const std::string ran = (dir.path() / (job + ".ran")).string();
    return "echo \"resume=$MSOMNI_RESUME_STEP\" >> " + starts(job) + "; [ -e " + ran + " ] && exit 0; touch " + ran +
           "; " + first_run + "trap 'exit 0' TERM; sleep 60 & wait";
  };
  child_process with_dir(MSOMNI_CLI_BINARY,
                         {"job", "--scheduler-info", info, "--id", "opaque", "--gpus", "4", "--run-dir", run_dir.string(),
                          "--", "sh", "-c",
                          command("opaque", "cat " + metrics + " >> " + (run_dir / "metrics.jsonl").string() + "; ")});
  child_process no_dir(MSOMNI_CLI_BINARY, {"job", "--scheduler-info", info, "--id", "nodir", "--gpus", "4", "--", "sh",
                                           "-c", command("nodir", "")});
  REQUIRE_MESSAGE(with_dir.read_until("msomni job opaque: started", 20s), with_dir.log);
  REQUIRE_MESSAGE(no_dir.read_until("msomni job nodir: started", 20s), no_dir.log);
  REQUIRE(within_30s([&] { return std::filesystem::exists(run_dir / "metrics.jsonl"); }));
  // A critical job on all 8 GPUs preempts both.
  const auto crit = run_command(std::string(MSOMNI_CLI_BINARY) + " job --scheduler-info " + info +
                                " --id crit --class critical --gpus 8 -- true");
  CHECK_MESSAGE(crit.exit_code == 0, crit.output);
  const auto released = with_dir.read_until("msomni job opaque: released its GPUs", 30s);
  REQUIRE_MESSAGE(released, with_dir.log);
  CHECK(*released == "msomni job opaque: released its GPUs (command ended with 0, checkpoint step 2013)");
  const auto unknown = no_dir.read_until("msomni job nodir: released its GPUs", 30s);
  REQUIRE_MESSAGE(unknown, no_dir.log);
  CHECK(*unknown == "msomni job nodir: released its GPUs (command ended with 0, checkpoint step unknown (no --run-dir: "
                    "msomni job cannot see its checkpoints))");
  // Started again after the critical job: the first resumes from the step it saved.
  REQUIRE_MESSAGE(with_dir.read_until("msomni job opaque: finished", 30s), with_dir.log);
  REQUIRE_MESSAGE(no_dir.read_until("msomni job nodir: finished", 30s), no_dir.log);
  CHECK(with_dir.log.find("msomni job opaque: resumes from checkpoint step 2013") != std::string::npos);
  // (It may run again between the preemptions, on GPUs it borrows while crit waits for the
  // other job's drain: every start after the first resumes from 2013.)
  const std::string opaque_starts = read_text(starts("opaque")), nodir_starts = read_text(starts("nodir"));
  CHECK_MESSAGE(opaque_starts.rfind("resume=0\nresume=2013\n", 0) == 0, opaque_starts);
  CHECK_MESSAGE(count_of(opaque_starts, "resume=") == 1 + count_of(opaque_starts, "resume=2013"), opaque_starts);
  CHECK_MESSAGE(count_of(nodir_starts, "resume=") == count_of(nodir_starts, "resume=0\n"), nodir_starts);
  CHECK(count_of(nodir_starts, "resume=") >= 2);
  CHECK(with_dir.wait(10s) == 0);
  CHECK(no_dir.wait(10s) == 0);
  stop(*sched, "msomni-sched: stopped");
}
