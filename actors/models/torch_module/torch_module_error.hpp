// What the torch backend throws when the user's module, its file or its Python cannot do what
// msomni asks: what() is the reason (with the user's FILE:LINE where there is one), `key` the
// [model] key it concerns ("model.torch_file", "model.torch_class", "model.torch_args",
// "model.torch_python"), so a config check can point at the line that set it.
#pragma once

#include <stdexcept>
#include <string>

namespace msomni::models {

struct torch_module_error : std::runtime_error {
  torch_module_error(std::string config_key, const std::string& reason)
      : std::runtime_error(reason), key(std::move(config_key)) {}
  std::string key;
};

}  // namespace msomni::models
