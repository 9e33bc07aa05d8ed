// --set overrides: values, locations, array elements, and errors that name the --set.
#include "config/config_loader.hpp"
#include "support/config_text.hpp"

#include <doctest/doctest.h>

using namespace msomni::config;

namespace {
config_error only_error(std::vector<std::string> sets) {
  try {
    load_string(msomni::testing::valid_config_text(), "t.toml", sets);
  } catch (const config_errors& e) {
    REQUIRE(e.errors().size() == 1);
    return e.errors()[0];
  }
  FAIL("expected an error");
  return {};
}
}  // namespace

TEST_CASE("--set replaces values, creates sections, and reaches array tables") {
  const auto c = load_string(msomni::testing::valid_config_text(), "t.toml",
                             {"training.steps=99", "job.name=renamed", "io.prefetch_depth=5",
                              "data.sources[1].weight=0.5", "job.class=\"critical\""});
  CHECK(c.training.steps == 99);
  CHECK(c.job.name == "renamed");
  CHECK(c.io.prefetch_depth == 5);
  CHECK(c.data.sources[1].weight == 0.5);
  CHECK(c.job.klass == job_class::critical);
  CHECK(c.key_locations.at("training.steps") == "--set[1]:1:16");
}

TEST_CASE("--set errors are located at the override") {
  auto e = only_error({"training.steps=abc"});
  CHECK(e.to_string() == "--set[1]:1:16: training.steps: expected integer, got string");
  e = only_error({"training.steps=5", "trainig.steps=5"});
  CHECK(e.to_string() == "--set[2]:1:1: trainig: unknown key");
  e = only_error({"training.steps"});
  CHECK(e.to_string() == "--set[1]:1:1: training.steps: expected key.path=value");
  e = only_error({"training..steps=1"});
  CHECK(e.reason.find("malformed key path") == 0);
  e = only_error({"data.sources[7].weight=1"});
  CHECK(e.key == "data.sources[7]");
  e = only_error({"training.steps=[1,"});
  CHECK(e.file == "--set[1]");
  CHECK(e.reason.find("invalid value") == 0);
  e = only_error({"job.name.first=x"});
  CHECK(e.reason == "is a string, not a table");
}
