// Which config changes a resume accepts: the comparison of a checkpoint's resolved config
// with the resuming one, key by key, on configs loaded from real TOML text.
#include "config/config_loader.hpp"
#include "config/resume_compatibility.hpp"
#include "support/config_text.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni::config;

namespace {

std::map<std::string, std::string> resolved(std::vector<std::string> sets = {}) {
  return load_string(msomni::testing::valid_config_text(), "t.toml", sets).resolved_values;
}

std::vector<std::string> keys_of(const std::vector<config_change>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) out.push_back(c.key);
  return out;
}

}  // namespace

TEST_CASE("the same config resumes with nothing to list") {
  const auto a = resolved();
  const auto r = compare_for_resume(a, a);
  CHECK(r.saved_config_known);
  CHECK(r.compatible());
  CHECK(r.accepted.empty());
}

TEST_CASE("a changed model width is refused and named with both values") {
  const auto r = compare_for_resume(resolved(), resolved({"model.d_model=32"}));
  REQUIRE(r.refused.size() == 1);
  CHECK(r.refused[0].key == "model.d_model");
  CHECK(r.refused[0].now == "32");
  CHECK(r.refused[0].saved != "32");
  CHECK_FALSE(r.compatible());
  CHECK(describe(r.refused[0]).find("model.d_model ") == 0);
}

TEST_CASE("steps, lr, checkpoint interval, replicas and io tuning may change and are listed") {
  const auto r = compare_for_resume(resolved(), resolved({"training.steps=999", "training.lr=0.0123",
                                                          "checkpoint.interval_steps=7", "io.prefetch_depth=5"}));
  CHECK(r.compatible());
  const auto keys = keys_of(r.accepted);
  for (const auto* k : {"training.steps", "training.lr", "checkpoint.interval_steps", "io.prefetch_depth"})
    CHECK_MESSAGE(std::count(keys.begin(), keys.end(), k) == 1, k);
}

TEST_CASE("the seed, the batch slot and every data key are refused") {
  const auto r = compare_for_resume(resolved(), resolved({"training.seed=4242", "data.shuffle=false",
                                                          "data.sources[0].weight=0.9"}));
  const auto keys = keys_of(r.refused);
  CHECK(std::count(keys.begin(), keys.end(), "training.seed") == 1);
  CHECK(std::count(keys.begin(), keys.end(), "data.shuffle") == 1);
  CHECK(std::count(keys.begin(), keys.end(), "data.sources[0].weight") == 1);
  for (const auto* k : {"training.micro_batch", "training.global_batch", "model.vocab_size", "data.mix_strategy"})
    CHECK_MESSAGE(key_fixes_saved_state(k), k);
  for (const auto* k : {"training.steps", "training.lr", "training.warmup_steps", "elasticity.replicas",
                        "checkpoint.keep", "io.decode_workers", "training.grad_accum"})
    CHECK_FALSE_MESSAGE(key_fixes_saved_state(k), k);
}

TEST_CASE("a key only one side has is a difference") {
  auto saved = resolved();
  auto now = saved;
  now["model.my_hidden"] = "7";         // a plugin key the checkpoint's model did not have
  saved["training.some_old_key"] = "1";  // a key a later msomni no longer reads
  const auto r = compare_for_resume(saved, now);
  REQUIRE(r.refused.size() == 1);
  CHECK(r.refused[0].saved.empty());
  CHECK(describe(r.refused[0]) == "model.my_hidden (none) -> 7");
  REQUIRE(r.accepted.size() == 1);
  CHECK(r.accepted[0].now.empty());
}

TEST_CASE("numbers compare by value and a checkpoint without a config is not compared") {
  const std::map<std::string, std::string> a{{"training.seed", "300"}, {"training.lr", "3e-4"}};
  const std::map<std::string, std::string> b{{"training.seed", "300.0"}, {"training.lr", "0.0003"}};
  const auto same = compare_for_resume(a, b);
  CHECK(same.compatible());
  CHECK(same.accepted.empty());
  const auto unknown = compare_for_resume({}, b);
  CHECK_FALSE(unknown.saved_config_known);
  CHECK(unknown.compatible());
}
