// A plugin's own [model] keys: declared through MSOMNI_MODEL_PLUGIN_KEYS, read by the config
// loader like built-in keys (types, ranges, FILE:LINE:COL or --set[N]), handed to the model
// as typed values; malformed tables and unloadable plugins are errors at model.plugin.
#include "config/config_loader.hpp"
#include "config/plugin_library.hpp"
#include "model/model_registry.hpp"
#include "support/config_text.hpp"
#include "support/process_runner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

using namespace msomni;

namespace {

std::string keys_plugin(int table) {
  return std::string(MSOMNI_TEST_KEYS_PLUGIN_DIR) + "/libmsomni_test_keys_plugin_" + std::to_string(table) + ".so";
}

// [model] first, so its lines are 1.. in the file.
std::string config_with(const std::string& plugin, const std::string& model_lines = "") {
  return "[model]\nname = \"keys-probe\"\nplugin = \"" + plugin + "\"\n" + model_lines +
         msomni::testing::valid_config_text();
}

std::vector<config::config_error> errors_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    config::load_string(text, "t.toml", sets);
  } catch (const config::config_errors& e) {
    return e.errors();
  }
  return {};
}

}  // namespace

TEST_CASE("declared plugin keys load at their defaults and take values of their type") {
  const auto c = config::load_string(config_with(keys_plugin(0)), "t.toml");
  const auto& v = c.model.plugin_values;
  REQUIRE(v.size() == 4);
  CHECK(std::get<int64_t>(v.at("probe_width")) == 8);
  CHECK(std::get<double>(v.at("probe_rate")) == 0.25);
  CHECK(std::get<bool>(v.at("probe_tied")) == false);
  CHECK(std::get<std::string>(v.at("probe_init")) == "normal");
  CHECK(std::count(c.defaults_filled.begin(), c.defaults_filled.end(), "model.probe_width = 8") == 1);

  const auto set = config::load_string(
      config_with(keys_plugin(0), "probe_width = 64\nprobe_tied = true\n"), "t.toml",
      {"model.probe_rate=0.5", "model.probe_init=xavier"});
  CHECK(std::get<int64_t>(set.model.plugin_values.at("probe_width")) == 64);
  CHECK(std::get<bool>(set.model.plugin_values.at("probe_tied")) == true);
  CHECK(std::get<double>(set.model.plugin_values.at("probe_rate")) == 0.5);
  CHECK(std::get<std::string>(set.model.plugin_values.at("probe_init")) == "xavier");
  CHECK(set.key_locations.at("model.probe_width") == "t.toml:4:15");
  // The values are part of the resolved config, so of its hash.
  CHECK(config::config_hash(set) != config::config_hash(c));

  // The model reads them through the typed accessors.
  const model::model_context ctx{set.model, 1};
  CHECK(model::plugin_int(ctx, "probe_width") == 64);
  CHECK(model::plugin_float(ctx, "probe_rate") == 0.5);
  CHECK(model::plugin_bool(ctx, "probe_tied"));
  CHECK(model::plugin_string(ctx, "probe_init") == "xavier");
  CHECK_THROWS_WITH_AS(model::plugin_float(ctx, "probe_width"), doctest::Contains("not a declared float key"),
                       std::invalid_argument);
  CHECK_THROWS_AS(model::plugin_int(ctx, "nope"), std::invalid_argument);
}

TEST_CASE("a bad value of a declared key is located in the file or at its --set") {
  auto errors = errors_of(config_with(keys_plugin(0), "probe_width = 100\nprobe_tied = 3\n"));
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].to_string() == "t.toml:4:15: model.probe_width: value 100 is out of range [1, 64]");
  CHECK(errors[1].to_string() == "t.toml:5:14: model.probe_tied: expected boolean, got integer");

  errors = errors_of(config_with(keys_plugin(0)), {"training.steps=5", "model.probe_rate=0.75"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].file == "--set[2]");
  CHECK(errors[0].key == "model.probe_rate");
  CHECK(errors[0].reason == "value 0.75 is out of range [0, 0.5]");
}

TEST_CASE("keys no one declared stay refused, with or without a plugin") {
  auto errors = errors_of(config_with(keys_plugin(0), "probe_wdith = 3\n"));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].to_string() == "t.toml:4:1: model.probe_wdith: unknown key");
  // Without model.plugin nothing is declared: a plugin key alone is unknown.
  errors = errors_of("[model]\nprobe_width = 3\n" + msomni::testing::valid_config_text());
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].key == "model.probe_width");
  CHECK(errors[0].reason == "unknown key");
}

TEST_CASE("an unloadable plugin or a malformed key table is an error at model.plugin") {
  auto at_plugin = [](const std::vector<config::config_error>& errors, const std::string& why) {
    REQUIRE(!errors.empty());
    CHECK(errors[0].key == "model.plugin");
    CHECK(errors[0].line == 3);
    CHECK(errors[0].column == 10);
    CHECK(errors[0].reason.find(why) != std::string::npos);
  };
  at_plugin(errors_of(config_with("/nonexistent/libnope.so")), "cannot load /nonexistent/libnope.so");
  at_plugin(errors_of(config_with("libm.so.6")), "does not export msomni_model_plugin_version");
  at_plugin(errors_of(config_with(keys_plugin(1))), "declares \"probe_width\" twice");
  at_plugin(errors_of(config_with(keys_plugin(2))), "declares key \"d_model\", which is a built-in [model] key");
  at_plugin(errors_of(config_with(keys_plugin(3))), "default 0.75 outside its finite range [0, 0.5]");
  // Given by --set, the error is located there.
  const auto errors = errors_of(config_with(keys_plugin(0)), {"model.plugin=/nonexistent/libnope.so"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].file == "--set[1]");
  CHECK(errors[0].key == "model.plugin");
}

TEST_CASE("a relative model.plugin is taken from the config file's folder") {
  msomni::testing::temp_dir dir;
  const auto relative = std::filesystem::relative(keys_plugin(0), dir.path()).string();
  const auto path = dir.write("job.toml", config_with(relative, "probe_width = 2\n"));
  const auto c = config::load_file(path);
  CHECK(std::get<int64_t>(c.model.plugin_values.at("probe_width")) == 2);
  CHECK(config::resolve_plugin_path("libx.so", "/cfg") == "libx.so");
  CHECK(config::resolve_plugin_path("./libx.so", "") == "./libx.so");
  CHECK(config::resolve_plugin_path("sub/../libx.so", "/cfg") == "/cfg/libx.so");
}
