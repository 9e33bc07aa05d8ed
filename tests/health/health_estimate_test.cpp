// The pre-flight sizes the built-in model from its layout alone (a model too big for this
// machine must be judged, not built): that sum must stay the model's own estimate_memory.
#include "builtin_models.hpp"
#include "health_probes.hpp"

#include "config/config_loader.hpp"
#include "model/model_registry.hpp"

#include <doctest/doctest.h>

TEST_CASE("health estimate: the layout-only memory estimate equals fuyu-tiny's estimate_memory") {
  for (const char* overrides : {"", "model.d_model=32", "training.micro_batch=4"}) {
    CAPTURE(overrides);
    std::vector<std::string> sets;
    if (*overrides) sets.push_back(overrides);
    const auto cfg = msomni::config::load_file(std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml", sets);
    std::string why;
    const auto estimate = msomni::health::estimate_model_memory(cfg, why);
    REQUIRE(estimate);
    msomni::model::model_registry registry;
    msomni::models::register_builtin_models(registry);
    const msomni::model::model_context context{cfg.model, 1, msomni::model::compute_device::cpu, 0, 1};
    const auto model = registry.create(context);
    const auto built = model->estimate_memory(cfg.training.micro_batch, cfg.model.max_seq_len);
    CHECK(estimate->parameter_bytes == built.parameter_bytes);
    CHECK(estimate->gradient_bytes == built.gradient_bytes);
    CHECK(estimate->optimizer_bytes == built.optimizer_bytes);
    CHECK(estimate->activation_bytes == built.activation_bytes);
  }
}

TEST_CASE("health estimate: a plugin model is not sized without building it, and says so") {
  auto cfg = msomni::config::load_file(std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml");
  cfg.model.name = "bigram";
  std::string why;
  CHECK(!msomni::health::estimate_model_memory(cfg, why));
  CHECK(why.find("plugin") != std::string::npos);
}
