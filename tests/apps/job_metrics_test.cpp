// msomni job turns msomni-run's metrics.jsonl lines into step reports for the scheduler's
// predictor: the step spans the checkpoint the rank stood still for after it. The follower
// reports each complete line once, starts again with a new run's file, and after a
// scheduler restart reports the newest lines again. The newest line with a checkpoint phase
// tells the step a command last saved.
#include "job_metrics.hpp"

#include "support/process_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>
#include <string>

using msomni::cli::metrics_follower;
using msomni::cli::step_report_from;
using msomni::testing::temp_dir;

namespace {

std::string step_line(int step, double ms) {
  return nlohmann::json{{"step", step}, {"step_time_ms", ms}, {"data_wait_ms", 1.0}}.dump() + "\n";
}

void append(const temp_dir& dir, const std::string& text) {
  std::ofstream(dir.path() / "metrics.jsonl", std::ios::app) << text;
}

}  // namespace

TEST_CASE("msomni job: a metrics line with a checkpoint phase becomes a step report that spans it") {
  const auto r = step_report_from(
      "crit", R"({"step":100,"loss":2.5,"world_size":2,"step_time_ms":800.000,"tokens_per_s":10.0,"data_wait_ms":200.000,"checkpoint_ms":400.000,"downgraded_samples":0,"time_ms":1})");
  REQUIRE(r);
  CHECK(r->job == "crit");
  CHECK(r->step_s == doctest::Approx(1.2));
  CHECK(r->data_wait_s == doctest::Approx(0.2));
  CHECK(r->checkpoint_s == doctest::Approx(0.4));
  CHECK(r->bubble_share == 0);
}

TEST_CASE("msomni job: a metrics line of an older msomni-run without checkpoint_ms reports no phase") {
  const auto r = step_report_from("j", R"({"step":3,"step_time_ms":500.0,"data_wait_ms":100.0})");
  REQUIRE(r);
  CHECK(r->step_s == doctest::Approx(0.5));
  CHECK(r->checkpoint_s == 0);
}

TEST_CASE("msomni job: a metrics line without a positive step time is no step report") {
  CHECK_FALSE(step_report_from("j", R"({"step":3,"data_wait_ms":100.0})"));
  CHECK_FALSE(step_report_from("j", R"({"step":3,"step_time_ms":0.0})"));
  CHECK_FALSE(step_report_from("j", R"({"step":3,"step_time_ms":"fast"})"));
  CHECK_FALSE(step_report_from("j", "not json at all"));
  CHECK_FALSE(step_report_from("j", R"({"step":3,"step_time_ms":null,"step_time_ms_nonfinite":true})"));
  CHECK_FALSE(step_report_from("j", R"([{"step_time_ms":500.0}])"));
}

TEST_CASE("msomni job: non-finite numbers in a metrics line are read as null plus <name>_nonfinite") {
  // A NaN loss does not matter to the predictor; a non-finite wait or checkpoint counts as none.
  const auto r = step_report_from(
      "j", R"({"step":7,"loss":null,"loss_nonfinite":true,"step_time_ms":500.0,"data_wait_ms":null,)"
           R"("data_wait_ms_nonfinite":true,"checkpoint_ms":null,"checkpoint_ms_nonfinite":true})");
  REQUIRE(r);
  CHECK(r->step_s == doctest::Approx(0.5));
  CHECK(r->data_wait_s == 0);
  CHECK(r->checkpoint_s == 0);
}

TEST_CASE("the metrics follower reports each complete line once and a partial line when it is complete") {
  temp_dir dir;
  metrics_follower f(dir.path().string(), "j");
  CHECK(f.poll().empty());  // no file yet
  const std::string third = step_line(3, 3000);
  const size_t cut = third.find("step_ti") + 7;  // the line is being appended: half of it is there
  append(dir, step_line(1, 1000) + step_line(2, 2000) + third.substr(0, cut));
  auto got = f.poll();
  REQUIRE(got.size() == 2);
  CHECK(got[0].step_s == doctest::Approx(1.0));
  CHECK(got[1].step_s == doctest::Approx(2.0));
  CHECK(f.poll().empty());
  append(dir, third.substr(cut));
  got = f.poll();
  REQUIRE(got.size() == 1);
  CHECK(got[0].step_s == doctest::Approx(3.0));
  // At most `max` per poll; the rest at the next.
  std::string many;
  for (int i = 4; i < 14; ++i) many += step_line(i, 1000);
  append(dir, many);
  CHECK(f.poll(4).size() == 4);
  CHECK(f.poll().size() == 6);
}

TEST_CASE("the metrics follower starts again when a new run writes a shorter file") {
  temp_dir dir;
  metrics_follower f(dir.path().string(), "j");
  append(dir, step_line(1, 1000) + step_line(2, 1000) + step_line(3, 1000));
  CHECK(f.poll().size() == 3);
  dir.write("metrics.jsonl", step_line(1, 4000));  // truncated by a fresh run
  auto got = f.poll();
  REQUIRE(got.size() == 1);
  CHECK(got[0].step_s == doctest::Approx(4.0));
}

TEST_CASE("the metrics follower rewinds to the newest lines for a restarted scheduler") {
  temp_dir dir;
  metrics_follower f(dir.path().string(), "j");
  f.rewind(5);  // nothing read yet: nothing to do
  CHECK(f.offset() == 0);
  std::string lines;
  for (int i = 1; i <= 10; ++i) lines += step_line(i, 100.0 * i);
  append(dir, lines);
  CHECK(f.poll().size() == 10);
  f.rewind(3);
  auto got = f.poll();
  REQUIRE(got.size() == 3);  // steps 8, 9, 10 again
  CHECK(got[0].step_s == doctest::Approx(0.8));
  CHECK(got[2].step_s == doctest::Approx(1.0));
  f.rewind(50);  // more than the file has: all of it
  CHECK(f.offset() == 0);
  CHECK(f.poll().size() == 10);
  f.rewind(10);  // exactly the file
  CHECK(f.offset() == 0);
}

TEST_CASE("the metrics follower rewinds within its window on a long file and starts at a whole line") {
  temp_dir dir;
  metrics_follower f(dir.path().string(), "j");
  const std::string line = step_line(1, 1000);
  std::string lines;
  const size_t count = 600 * 1024 / line.size() + 10;  // longer than the 512 KiB read back
  for (size_t i = 0; i < count; ++i) lines += line;
  append(dir, lines);
  while (!f.poll(100000).empty()) {
  }
  f.rewind(200);
  CHECK(f.poll(100000).size() == 200);
  f.rewind(count);  // more lines than the window holds: from its first whole line
  const auto again = f.poll(100000);
  CHECK(again.size() < count);
  CHECK(again.size() >= 512 * 1024 / line.size() - 1);
}

TEST_CASE("a follower without a run directory reports nothing") {
  metrics_follower f("", "j");
  CHECK(f.poll().empty());
  f.rewind(10);
  CHECK(f.offset() == 0);
}

TEST_CASE("msomni job: the step a command last saved is the newest metrics line with a checkpoint phase") {
  using msomni::cli::saved_step_in;
  // An opaque command that saved after steps 1000 and 2013 and trained on.
  std::string lines;
  for (int step = 990; step <= 2020; ++step)
    lines += nlohmann::json{{"step", step}, {"step_time_ms", 100.0}, {"data_wait_ms", 1.0},
                            {"checkpoint_ms", step == 1000 || step == 2013 ? 250.0 : 0.0}}
                 .dump() +
             "\n";
  CHECK(saved_step_in(lines) == std::optional<uint64_t>(2013));
  // A partial last line (being written) and lines without a step or a phase change nothing.
  CHECK(saved_step_in(lines + R"({"step":2021,"checkpoint_ms":3)") == std::optional<uint64_t>(2013));
  CHECK(saved_step_in(lines + R"({"checkpoint_ms":300.0})" + "\n") == std::optional<uint64_t>(2013));
  // No line says it saved: msomni job cannot know the step (not 0).
  CHECK_FALSE(saved_step_in(step_line(1, 10) + step_line(2, 10)));
  CHECK_FALSE(saved_step_in(""));
}

TEST_CASE("msomni job: the saved step is read back from a run directory's metrics.jsonl longer than one read") {
  using msomni::cli::saved_step_in_metrics;
  temp_dir dir;
  CHECK_FALSE(saved_step_in_metrics(dir.path().string()));  // no file
  CHECK_FALSE(saved_step_in_metrics(""));
  // One save at step 7, then over 2 MiB of lines without one: found across the reads.
  std::string text = nlohmann::json{{"step", 7}, {"step_time_ms", 10.0}, {"checkpoint_ms", 5.0}}.dump() + "\n";
  const std::string pad(400, 'x');
  for (int step = 8; text.size() < (2u << 20) + 12345; ++step)
    text += nlohmann::json{{"step", step}, {"step_time_ms", 10.0}, {"checkpoint_ms", 0.0}, {"note", pad}}.dump() + "\n";
  append(dir, text);
  CHECK(saved_step_in_metrics(dir.path().string()) == std::optional<uint64_t>(7));
  append(dir, nlohmann::json{{"step", 99999}, {"step_time_ms", 10.0}, {"checkpoint_ms", 1.0}}.dump() + "\n");
  CHECK(saved_step_in_metrics(dir.path().string()) == std::optional<uint64_t>(99999));
}
