// Loading valid configs: typed values, defaults filled and recorded, errors collected.
#include "config/config_loader.hpp"
#include "config/device_choice.hpp"
#include "support/config_text.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni::config;

namespace {
bool has_default(const job_config& c, const std::string& prefix) {
  return std::any_of(c.defaults_filled.begin(), c.defaults_filled.end(),
                     [&](const std::string& d) { return d.rfind(prefix, 0) == 0; });
}

std::vector<config_error> errors_of(const std::string& text, std::vector<std::string> sets = {}) {
  try {
    load_string(text, "t.toml", sets);
  } catch (const config_errors& e) {
    return e.errors();
  }
  return {};
}
}  // namespace

TEST_CASE("a valid config loads with typed values and recorded defaults") {
  const auto c = load_string(msomni::testing::valid_config_text(), "t.toml");
  CHECK(c.job.name == "unit");
  CHECK(c.job.klass == job_class::regular);
  REQUIRE(c.data.sources.size() == 2);
  CHECK(c.data.sources[0].weight == 2.0);
  CHECK(c.data.sources[1].weight == 1.0);
  CHECK(c.data.sources[1].kind == msomni::modality::text);
  CHECK(c.training.lr == doctest::Approx(0.001));
  CHECK(c.elasticity.max_replicas == 4);
  // The documented defaults.
  CHECK(c.elasticity.heartbeat_interval_s == 10.0);
  CHECK(c.memory.sequence_length == 200);
  CHECK(c.memory.horizon_steps == 10);
  CHECK(c.memory.safety_margin_gb == doctest::Approx(3.5));
  CHECK(c.io.prefetch_depth == 3);
  CHECK(has_default(c, "io.pipeline = \"actors\""));
  CHECK(has_default(c, "checkpoint.dir = \"checkpoints\""));
  CHECK(!has_default(c, "training.lr"));
  CHECK(c.key_locations.at("training.lr") == "t.toml:20:6");
}

TEST_CASE("every error in a file is reported, not only the first") {
  auto text = msomni::testing::valid_config_text();
  text += "\n[memory]\nhorizon_steps = 0\nbogus = 1\n";
  const auto errors = errors_of(text, {"training.steps=-1"});
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].key == "training.steps");
  CHECK(errors[1].key == "memory.horizon_steps");
  CHECK(errors[2].key == "memory.bogus");
}

TEST_CASE("integers are accepted where a float is expected, not the reverse") {
  auto c = load_string(msomni::testing::valid_config_text(), "t.toml", {"training.lr=1"});
  CHECK(c.training.lr == 1.0);
  const auto errors = errors_of(msomni::testing::valid_config_text(), {"training.steps=10.0"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].reason == "expected integer, got float");
}

TEST_CASE("the plan shows ranks, batch arithmetic, sources, checkpoints and defaults") {
  const auto c = load_string(msomni::testing::valid_config_text(), "t.toml");
  const auto plan = render_plan(c, node_gpu_facts{});
  CHECK(plan.find("global 8 = micro 2 x accum 2 x replicas 2") != std::string::npos);
  CHECK(plan.find("rank 1 -> local") != std::string::npos);
  CHECK(plan.find("img: image from synthetic://shapes (weight 2, share 66.6667%)") != std::string::npos);
  CHECK(plan.find("checkpoints:  checkpoints every 50 steps") != std::string::npos);
  CHECK(plan.find("defaults filled in (") != std::string::npos);
}

TEST_CASE("the config hash is stable and changes with any resolved value") {
  const auto a = load_string(msomni::testing::valid_config_text(), "a.toml");
  const auto b = load_string(msomni::testing::valid_config_text(), "b.toml");
  const auto c = load_string(msomni::testing::valid_config_text(), "a.toml", {"training.seed=8"});
  CHECK(config_hash(a) == config_hash(b));
  CHECK(config_hash(a) != config_hash(c));
}

TEST_CASE("a missing file is a located error") {
  try {
    load_file("/nonexistent/job.toml");
    FAIL("expected an error");
  } catch (const config_errors& e) {
    CHECK(std::string(e.what()).find("/nonexistent/job.toml:0:0: (file): cannot open") == 0);
  }
}

namespace {
std::string without_grad_accum() {
  std::string text = msomni::testing::valid_config_text();
  const std::string line = "grad_accum = 2\n";
  text.erase(text.find(line), line.size());
  return text;
}
}  // namespace

TEST_CASE("a left-out grad_accum is derived from global_batch, micro_batch and replicas") {
  const auto c = load_string(without_grad_accum(), "t.toml");
  CHECK(c.training.grad_accum == 2);
  CHECK(std::count(c.defaults_filled.begin(), c.defaults_filled.end(), "training.grad_accum = 2") == 1);
  CHECK(c.resolved_values.at("training.grad_accum") == "2");
  // One replica fewer: the same global batch takes twice the accumulation.
  const auto one = load_string(without_grad_accum(), "t.toml", {"elasticity.replicas=1"});
  CHECK(one.training.grad_accum == 4);
  // 8 samples cannot be split into micro-batches of 2 over 3 replicas.
  const auto errors = errors_of(without_grad_accum(), {"elasticity.replicas=3"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].key == "training.global_batch");
  CHECK(errors[0].line == 16);
  CHECK(errors[0].reason.find("grad_accum is left out and cannot be derived: global_batch 8 is not a multiple of "
                              "micro_batch 2 x elasticity.replicas 3 = 6") != std::string::npos);
}

TEST_CASE("an explicit grad_accum that disagrees with the batch arithmetic stays refused") {
  const auto errors = errors_of(msomni::testing::valid_config_text(), {"elasticity.replicas=1"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].reason.find("inconsistent batch arithmetic: global_batch 8 != micro_batch 2 x grad_accum 2 x "
                              "elasticity.replicas 1 = 4") != std::string::npos);
}

TEST_CASE("the resolved values list every key given or defaulted as TOML text") {
  const auto c = load_string(msomni::testing::valid_config_text(), "t.toml", {"model.d_model=32"});
  CHECK(c.resolved_values.at("job.name") == "\"unit\"");
  CHECK(c.resolved_values.at("training.lr") == "0.001");
  CHECK(c.resolved_values.at("training.grad_accum") == "2");
  CHECK(c.resolved_values.at("model.d_model") == "32");
  CHECK(c.resolved_values.count("elasticity.heartbeat_interval_s") == 1);  // a default
  CHECK(c.resolved_values.count("model.name") == 1);
}
