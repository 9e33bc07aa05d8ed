// Models by name: built-in models register at start-up (register_builtin_models in
// actors/models), plugins register through load_model_plugin. The rank worker then asks
// for the model the config names.
#pragma once

#include "model/plugin_abi.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msomni::model {

class model_registry final : public model_host {
 public:
  void add_model(const std::string& name, const std::string& description,
                 model_factory factory) override;
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  std::vector<std::string> names() const;
  std::string description(const std::string& name) const;
  // Builds context.config.name; throws std::invalid_argument listing the known names when
  // it is not registered.
  std::unique_ptr<trainable_model> create(const model_context& context) const;

 private:
  struct entry {
    std::string description;
    model_factory factory;
  };
  std::map<std::string, entry> entries_;
};

// What loading a plugin did.
struct plugin_info {
  std::string path;                 // as resolved and handed to dlopen
  std::vector<std::string> added;   // model names it registered
};

// dlopens `plugin` (RTLD_NOW | RTLD_LOCAL), checks its API version and lets it register.
// A name with a '/' is a path, relative ones resolved against `base_dir` (the config
// file's folder); a bare name ("libmymodel.so") goes through the dynamic loader's search
// path. The library stays loaded for the life of the process: its code backs the models
// it creates. Throws std::runtime_error saying which plugin and why.
plugin_info load_model_plugin(const std::string& plugin, const std::string& base_dir,
                              model_registry& registry);

// The config-driven path: loads context.config.plugin when set, then creates the model.
std::unique_ptr<trainable_model> create_model(const model_context& context, model_registry& registry,
                                    const std::string& base_dir);

}  // namespace msomni::model
