// The [model] keys of a torch model: what they resolve to, and every refusal with its place.
#include "config/config_loader.hpp"
#include "support/config_text.hpp"

#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

using namespace msomni;

namespace {

std::string with_model(const std::string& model_keys) {
  return testing::valid_config_text() + "[model]\n" + model_keys;
}

// Every error of loading `text` (from /configs/job.toml), one a line; "" when it loads.
std::string errors_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    config::load_string(text, "/configs/job.toml", sets);
  } catch (const config::config_errors& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a torch model's keys resolve: the file against the config's folder, the arguments as JSON") {
  auto cfg = config::load_string(with_model("name = \"torch\"\ntorch_file = \"models/lm.py\"\ntorch_class = \"LM\"\n"
                                            "torch_args = { width = 16, tied = true, sizes = [1, 2], inner = { a = \"b\" } }\n"),
                                 "/configs/job.toml");
  CHECK(cfg.model.torch_file == "/configs/models/lm.py");
  CHECK(cfg.model.torch_class == "LM");
  CHECK(nlohmann::json::parse(cfg.model.torch_args) ==
        nlohmann::json{{"width", 16}, {"tied", true}, {"sizes", {1, 2}}, {"inner", {{"a", "b"}}}});
  CHECK(cfg.model.torch_python == "/usr/bin/python3");
  CHECK(cfg.resolved_values.at("model.torch_args") == cfg.model.torch_args);
  // A JSON string says the same; an absolute file stays as it is; --set reaches every key.
  cfg = config::load_string(with_model("name = \"torch\"\ntorch_file = \"/m/lm.py\"\ntorch_class = \"LM\"\n"
                                       "torch_args = '{\"width\": 16}'\n"),
                            "/configs/job.toml", {"model.torch_python=/opt/venv/bin/python"});
  CHECK(cfg.model.torch_file == "/m/lm.py");
  CHECK(nlohmann::json::parse(cfg.model.torch_args) == nlohmann::json{{"width", 16}});
  CHECK(cfg.model.torch_python == "/opt/venv/bin/python");
}

TEST_CASE("a torch model's keys change the config hash and other configs keep theirs") {
  const auto plain = config::load_string(testing::valid_config_text(), "/configs/job.toml");
  const auto torch_model = with_model("name = \"torch\"\ntorch_file = \"lm.py\"\ntorch_class = \"LM\"\n");
  const auto a = config::load_string(torch_model, "/configs/job.toml");
  const auto b = config::load_string(torch_model, "/configs/job.toml", {"model.torch_args={width = 8}"});
  CHECK(config::config_hash(a) != config::config_hash(b));
  CHECK(config::config_hash(a) != config::config_hash(plain));
  CHECK(plain.resolved_values.count("model.torch_file") == 0);
}

TEST_CASE("the torch keys are refused for another model, and fuyu-tiny's sizes and a plugin for a torch model") {
  auto e = errors_of(with_model("torch_file = \"lm.py\"\ntorch_args = { a = 1 }\n"));
  CHECK(e.find("job.toml:28:14: model.torch_file: read only when model.name = \"torch\" (model.name is \"fuyu-tiny\")") !=
        std::string::npos);
  CHECK(e.find("model.torch_args: read only when model.name = \"torch\"") != std::string::npos);
  e = errors_of(with_model("name = \"torch\"\ntorch_file = \"lm.py\"\ntorch_class = \"LM\"\nd_model = 64\nvocab_size = 300\n"
                           "plugin = \"libx.so\"\n"));
  CHECK(e.find("model.d_model: sizes fuyu-tiny only; a torch model has the size its module gives itself") !=
        std::string::npos);
  CHECK(e.find("model.vocab_size: sizes fuyu-tiny only") != std::string::npos);
  CHECK(e.find("model.plugin: model.name = \"torch\" is built in: no plugin is loaded for it") != std::string::npos);
}

TEST_CASE("a torch model needs its file and class, arguments that are a JSON object, and the CPU") {
  auto e = errors_of(with_model("name = \"torch\"\n"));
  CHECK(e.find("model.torch_file: required key is missing") != std::string::npos);
  CHECK(e.find("model.torch_class: required key is missing") != std::string::npos);
  e = errors_of(with_model("name = \"torch\"\ntorch_file = \"lm.py\"\ntorch_class = \"LM\"\ntorch_args = \"[1, 2]\"\n"));
  CHECK(e.find("model.torch_args: a string here must hold a JSON object") != std::string::npos);
  e = errors_of(with_model("name = \"torch\"\ntorch_file = \"lm.py\"\ntorch_class = \"LM\"\ntorch_python = \"\"\n"));
  CHECK(e.find("model.torch_python: must not be empty") != std::string::npos);
  e = errors_of(with_model("name = \"torch\"\ntorch_file = \"lm.py\"\ntorch_class = \"LM\"\n"), {"training.device=cuda"});
  CHECK(e.find("training.device: not built yet: a torch model (model.name = \"torch\") computes on the CPU") !=
        std::string::npos);
}
