// The memory-trace corpus in tests/data/memtrace (recorded by tools/memtrace/make_corpus.sh):
// the manifest names every trace, each trace reads strictly with the number of steps the
// manifest says, its config is a valid job config, and `msomni-memtrace eval --json` over the
// whole corpus scores every trace with every predictor (finite, in-range numbers). It checks
// that the corpus can be evaluated, not how well any predictor does on it.
#include "memory_trace.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>

using msomni::testing::read_text;
using msomni::testing::run_command;
namespace fs = std::filesystem;

namespace {

const fs::path corpus_dir = fs::path(MSOMNI_SOURCE_DIR) / "tests" / "data" / "memtrace";
const char* const predictor_names[] = {"last_value", "ewma",  "rolling_max",         "analytic",
                                       "ridge",      "lstm_attention_peak", "lstm_attention"};

nlohmann::json manifest() { return nlohmann::json::parse(read_text(corpus_dir / "corpus.json")); }

bool finite_at_least(const nlohmann::json& v, double low) {
  if (!v.is_number()) return false;
  const double x = v.get<double>();
  return std::isfinite(x) && x >= low;
}

}  // namespace

TEST_CASE("the memory-trace corpus manifest names every trace and each reads strictly") {
  const auto doc = manifest();
  REQUIRE(doc.at("traces").size() >= 5);
  std::set<std::string> names, files_listed;
  int tuning = 0, held_out = 0;
  for (const auto& e : doc.at("traces")) {
    const auto name = e.at("name").get<std::string>();
    CAPTURE(name);
    CHECK(names.insert(name).second);
    const auto split = e.at("split").get<std::string>();
    CHECK((split == "tuning" || split == "held_out"));
    (split == "tuning" ? tuning : held_out)++;
    CHECK(e.at("overrides").is_array());
    const auto config = fs::path(MSOMNI_SOURCE_DIR) / e.at("config").get<std::string>();
    CHECK(fs::is_regular_file(config));
    const auto dry = run_command(std::string(MSOMNI_RUN_BINARY) + " " + config.string() + " --dry-run");
    INFO(dry.output);
    CHECK(dry.exit_code == 0);
    const auto ranks = e.at("ranks").get<size_t>();
    REQUIRE(e.at("traces").size() == ranks);
    REQUIRE(e.at("steps").size() == ranks);
    for (size_t i = 0; i < ranks; ++i) {
      const auto rel = e.at("traces")[i].get<std::string>();
      files_listed.insert(rel);
      const auto path = corpus_dir / rel;
      const auto samples = msomni::predict::parse_memory_trace(read_text(path), path.string());  // throws on any bad line
      CHECK(samples.size() == e.at("steps")[i].get<size_t>());
      REQUIRE(samples.size() > 10);
      for (const auto& s : samples) {
        CHECK(s.peak_bytes > 0);
        CHECK(s.world_size >= 1);
      }
    }
  }
  CHECK(tuning >= 1);
  CHECK(held_out > tuning);
  // Every trace file in the corpus is in the manifest.
  for (const auto& d : fs::directory_iterator(corpus_dir)) {
    if (!d.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(d.path()))
      CHECK_MESSAGE(files_listed.count(d.path().filename().string() + "/" + f.path().filename().string()) == 1,
                    f.path().string());
  }
}

TEST_CASE("msomni-memtrace eval --json scores every corpus trace with every predictor") {
  const auto doc = manifest();
  std::string args;
  std::vector<std::pair<std::string, size_t>> expected;  // path, steps
  for (const auto& e : doc.at("traces"))
    for (size_t i = 0; i < e.at("traces").size(); ++i) {
      const auto path = (corpus_dir / e.at("traces")[i].get<std::string>()).string();
      args += " " + path;
      expected.emplace_back(path, e.at("steps")[i].get<size_t>());
    }
  const int horizon = 10;
  const auto r = run_command(std::string(MSOMNI_MEMTRACE_BINARY) + " eval --json --margin-gb 0 --horizon " +
                             std::to_string(horizon) + " --trace" + args);
  INFO(r.output.substr(0, 4000));
  REQUIRE(r.exit_code == 0);
  const auto out = nlohmann::json::parse(r.output);
  CHECK(out.at("margin_bytes") == 0.0);
  REQUIRE(out.at("traces").size() == expected.size());
  for (size_t t = 0; t < expected.size(); ++t) {
    const auto& tr = out.at("traces")[t];
    CAPTURE(expected[t].first);
    CHECK(tr.at("trace") == expected[t].first);
    CHECK(tr.at("steps") == expected[t].second);
    CHECK(finite_at_least(tr.at("analytic_estimate").at("base_bytes"), -1e18));
    CHECK(finite_at_least(tr.at("analytic_estimate").at("bytes_per_token"), -1e18));
    const auto& preds = tr.at("predictors");
    REQUIRE(preds.size() == std::size(predictor_names));
    for (size_t i = 0; i < preds.size(); ++i) {
      const auto& p = preds[i];
      CAPTURE(predictor_names[i]);
      CHECK(p.at("name") == predictor_names[i]);
      // Every step with a whole horizon after it is scored.
      CHECK(p.at("forecasts").get<size_t>() == expected[t].second - horizon);
      CHECK(p.at("forecasts").get<size_t>() > 0);
      for (const char* k : {"mae_bytes", "overhead_bytes", "step_mae_bytes", "observe_ns_mean", "observe_ns_max"})
        CHECK_MESSAGE(finite_at_least(p.at(k), 0), k);
      CHECK(finite_at_least(p.at("under_rate"), 0));
      CHECK(p.at("under_rate").get<double>() <= 1);
    }
  }
}
