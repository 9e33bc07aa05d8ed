// msomni-memtrace end to end: eval on a trace written by the test gives a row per predictor,
// --json parses with one entry per predictor, a malformed line gives FILE:LINE and exit 1,
// a bad command line exit 2; record runs a real quickstart job and collects its traces.
#include "memory_trace.hpp"
#include "sawtooth_trace.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include <string>

using msomni::testing::run_command;
using msomni::testing::temp_dir;

namespace {

const std::string tool = MSOMNI_MEMTRACE_BINARY;
const char* const names[] = {"last_value", "ewma", "rolling_max", "analytic", "ridge", "lstm_attention_peak",
                             "lstm_attention"};

std::string trace_text(int64_t steps) {
  std::string text;
  for (const auto& s : msomni::testing::sawtooth_trace(steps)) text += msomni::predict::memory_trace_line(s) + "\n";
  return text;
}

}  // namespace

TEST_CASE("msomni-memtrace eval prints a row per predictor and its json parses") {
  temp_dir dir;
  const auto a = dir.write("rank0.jsonl", trace_text(120));
  const auto b = dir.write("rank1.jsonl", trace_text(60));
  const auto table = run_command(tool + " eval --trace " + a + " " + b + " --margin-gb 1 --window 64");
  INFO(table.output);
  REQUIRE(table.exit_code == 0);
  CHECK(table.output.find("trace " + a + ": 120 steps, horizon 10, window 64, margin 1.00 GB") != std::string::npos);
  CHECK(table.output.find("trace " + b + ": 60 steps") != std::string::npos);
  for (const char* n : names) CHECK(table.output.find(std::string("  ") + n + " ") != std::string::npos);

  const auto json = run_command(tool + " eval --trace " + a + " --json --horizon 5");
  INFO(json.output);
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.output);
  CHECK(doc["horizon"] == 5);
  REQUIRE(doc["traces"].size() == 1);
  const auto& preds = doc["traces"][0]["predictors"];
  REQUIRE(preds.size() == std::size(names));
  for (size_t i = 0; i < preds.size(); ++i) {
    CHECK(preds[i]["name"] == names[i]);
    CHECK(preds[i]["forecasts"] == 115);
    CHECK(preds[i]["mae_bytes"].get<double>() >= 0);
    CHECK(preds[i]["under_rate"].get<double>() <= 1);
    CHECK_FALSE(preds[i].contains("forecast_actual_bytes"));  // only with --pairs
  }

  // --pairs: every scored step's forecast and actual, from which the scores follow.
  const auto pairs = run_command(tool + " eval --trace " + a + " --json --pairs --horizon 5 --margin-gb 0");
  REQUIRE(pairs.exit_code == 0);
  const auto with = nlohmann::json::parse(pairs.output)["traces"][0]["predictors"];
  for (const auto& p : with) {
    const auto& fa = p["forecast_actual_bytes"];
    REQUIRE(fa.size() == 115);
    double under = 0, mae = 0;
    for (const auto& x : fa) {
      under += x[1].get<double>() > x[0].get<double>() ? 1 : 0;
      mae += std::abs(x[1].get<double>() - x[0].get<double>());
    }
    CHECK(under / 115 == doctest::Approx(p["under_rate"].get<double>()));
    CHECK(mae / 115 == doctest::Approx(p["mae_bytes"].get<double>()).epsilon(1e-9));
  }
  CHECK(run_command(tool + " eval --trace " + a + " --pairs").exit_code == 2);  // needs --json
}

TEST_CASE("msomni-memtrace eval names the malformed line and exits 1") {
  temp_dir dir;
  std::string text = trace_text(4);
  const auto second = text.find('\n') + 1;
  text.insert(second + text.substr(second).find('\n') + 1, "{\"step\": 9}\n");  // becomes line 3
  const auto bad = dir.write("bad.jsonl", text);
  const auto r = run_command(tool + " eval --trace " + bad);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find(bad + ":3: the sample has no \"t_ms\"") != std::string::npos);
  const auto missing = run_command(tool + " eval --trace " + (dir.path() / "none.jsonl").string());
  CHECK(missing.exit_code == 1);
  CHECK(missing.output.find("none.jsonl: cannot open") != std::string::npos);
}

TEST_CASE("msomni-memtrace refuses a bad command line with exit 2") {
  temp_dir dir;
  const auto a = dir.write("rank0.jsonl", trace_text(20));
  CHECK(run_command(tool + " eval").exit_code == 2);
  CHECK(run_command(tool + " eval --trace " + a + " --horizon 0").exit_code == 2);
  CHECK(run_command(tool + " eval --trace " + a + " --margin-gb -1").exit_code == 2);
  CHECK(run_command(tool + " eval --trace " + a + " --bogus").exit_code == 2);
  const auto unknown = run_command(tool + " replay");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("unknown subcommand 'replay'") != std::string::npos);
  CHECK(run_command(tool).exit_code == 2);
  CHECK(run_command(tool + " eval --help").exit_code == 0);
  // Too short to score: said, not an error.
  const auto short_run = run_command(tool + " eval --trace " + a + " --horizon 30");
  CHECK(short_run.exit_code == 0);
  CHECK(short_run.output.find("too short to score") != std::string::npos);
}

TEST_CASE("msomni-memtrace record runs a real job and collects one trace per rank that eval reads") {
  temp_dir dir;
  ::setenv("MSOMNI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  const auto out = dir.path() / "rec";
  const auto r = run_command(tool + " record " + MSOMNI_SOURCE_DIR + "/configs/quickstart.toml --out " + out.string() +
                             " --set training.steps=5");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("2 trace(s) in " + (out / "traces").string()) != std::string::npos);
  const auto record = nlohmann::json::parse(msomni::testing::read_text(out / "record.json"));
  CHECK(record.at("msomni_run_exit_code") == 0);
  REQUIRE(record.at("traces").size() == 2);
  for (const auto& t : record.at("traces")) {
    const auto path = t.get<std::string>();
    const auto samples = msomni::predict::parse_memory_trace(msomni::testing::read_text(path), path);
    CHECK(samples.size() == 5);
    CHECK(samples.front().peak_bytes > 0);
  }
  const auto eval = run_command(tool + " eval --trace " + record.at("traces")[0].get<std::string>() + " --json");
  CHECK(eval.exit_code == 0);
  // A directory that holds anything is never written into.
  const auto again = run_command(tool + " record " + MSOMNI_SOURCE_DIR + "/configs/quickstart.toml --out " + out.string());
  CHECK(again.exit_code == 2);
  CHECK(again.output.find("is not an empty directory") != std::string::npos);
}
