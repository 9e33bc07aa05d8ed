// The embedding API end to end: the registry (built-ins, unknown names), loading a model
// plugin named by model.plugin, training it through the same interface as fuyu-tiny, and
// the loader's errors for missing, foreign and duplicate plugins.
#include "builtin_models.hpp"
#include "model/model_registry.hpp"
#include "square_batches.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace msomni;

TEST_CASE("registry creates built-in models by name and lists them when the name is unknown") {
  model::model_registry reg;
  models::register_builtin_models(reg);
  CHECK(reg.names() == std::vector<std::string>{"fuyu-tiny", "torch"});
  model::model_context ctx{test::tiny_model_config(), 1, model::compute_device::cpu, 0, 1};
  auto m = reg.create(ctx);
  CHECK(m->name() == "fuyu-tiny");
  CHECK(m->storage() == model::storage_kind::host);
  CHECK(m->parameter_count() == int64_t(m->gradient_data().size()));
  ctx.config.name = "gpt-huge";
  CHECK_THROWS_WITH_AS(reg.create(ctx), doctest::Contains("unknown model 'gpt-huge' (registered: fuyu-tiny"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(models::register_builtin_models(reg), doctest::Contains("already registered"),
                       std::invalid_argument);
}

TEST_CASE("a model plugin named by model.plugin registers and trains without runtime changes") {
  model::model_registry reg;
  models::register_builtin_models(reg);
  model::model_context ctx{test::tiny_model_config(), 9, model::compute_device::cpu, 0, 1};
  ctx.config.name = "bigram-mlp";
  // What the config loader resolves for the plugin's declared keys when a file leaves them out.
  ctx.config.plugin_values = {{"bigram_hidden", int64_t{0}}, {"bigram_init_std", 0.1}};
  const std::filesystem::path plugin(MSOMNI_TEST_PLUGIN);
  // Relative to the config's folder, as a config file would name it.
  ctx.config.plugin = "./" + plugin.filename().string();
  auto m = model::create_model(ctx, reg, plugin.parent_path().string());
  CHECK(reg.contains("bigram-mlp"));
  CHECK(m->name() == "bigram-mlp");
  CHECK(m->parameters().size() == 3);

  test::square_batches data(ctx.config, 4, 24, 9);
  model::optimizer_settings opt;
  opt.lr = 1e-2;
  std::vector<double> losses;
  for (int s = 0; s < 60; ++s) {
    m->zero_gradients();
    losses.push_back(m->forward_backward(data.next(), 1.0f).loss);
    CHECK_FALSE(m->optimizer_step(opt).skipped);
  }
  MESSAGE("bigram-mlp loss " << losses.front() << " -> " << losses.back());
  CHECK(losses.back() < 0.6 * losses.front());

  // Its checkpoint state round-trips through a second instance.
  auto copy = reg.create(ctx);
  copy->load_state(m->save_state());
  const auto probe = data.next();
  CHECK(copy->evaluate(probe).loss == m->evaluate(probe).loss);

  // Loading the same plugin again would register the same name twice.
  CHECK_THROWS_WITH_AS(model::load_model_plugin(plugin.string(), "", reg),
                       doctest::Contains("already registered"), std::runtime_error);
}

TEST_CASE("plugin loader errors name the plugin and the reason") {
  model::model_registry reg;
  CHECK_THROWS_WITH_AS(model::load_model_plugin("missing/libnope.so", "/tmp/cfg", reg),
                       doctest::Contains("/tmp/cfg/missing/libnope.so"), std::runtime_error);
  // A real shared library that is not a model plugin.
  CHECK_THROWS_WITH_AS(model::load_model_plugin("libm.so.6", "", reg),
                       doctest::Contains("does not export msomni_model_plugin_version"),
                       std::runtime_error);
  model::model_context ctx{test::tiny_model_config(), 1};
  ctx.config.name = "bigram-mlp";
  CHECK_THROWS_WITH_AS(model::create_model(ctx, reg, ""), doctest::Contains("registered: none"),
                       std::invalid_argument);
}
