// Opening a model plugin's shared library (model.plugin) and reading the [model] keys it
// declares. The config reader calls it so a plugin's keys are checked like built-in ones and
// an unloadable plugin is a config error before anything starts; the model registry opens
// the library the same way to let it register its models.
#pragma once

#include "model/plugin_keys.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::config {

// One declared key, copied out of the plugin's table and checked.
struct plugin_key_spec {
  std::string name;
  model::plugin_key_type type = model::plugin_key_type::integer;
  int64_t int_min = 0, int_max = 0, int_default = 0;
  double float_min = 0, float_max = 0, float_default = 0;
  bool bool_default = false;
  std::string string_default;
  std::string description;
};

// Where model.plugin points: a name with a '/' is a path, relative ones taken from
// `base_dir` (the config file's folder); a bare name ("libmymodel.so") is left to the
// dynamic loader's search path.
std::string resolve_plugin_path(const std::string& plugin, const std::string& base_dir);

// dlopens `path` (RTLD_NOW | RTLD_LOCAL) and checks the plugin API version it was built
// for. The handle is never closed: models and static objects of a plugin may outlive any
// scope here, and opening the same path again returns the same handle. Throws
// std::runtime_error saying why (the path, dlerror, missing entry points, the version).
void* open_model_plugin(const std::string& path);

// The plugin's key table (empty when it exports no msomni_plugin_keys), each row checked:
// a plain unique name, a known type, a finite range holding the default. Throws
// std::runtime_error naming the first bad row.
std::vector<plugin_key_spec> declared_plugin_keys(void* handle);

// "integer in [1, 4096], default 64" and the like, for --dry-run and errors.
std::string describe(const plugin_key_spec& key);

}  // namespace msomni::config
