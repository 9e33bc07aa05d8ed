// The [model] keys a model plugin declares for itself: a table of {name, type, range,
// default} behind the C entry point msomni_plugin_keys. When model.plugin is set the config
// reader opens the plugin, reads this table and checks `model.<name>` like a built-in key:
// type, range, FILE:LINE:COL (or --set[N]) in the error; keys nobody declared stay refused.
// The values reach the model as model_context::config.plugin_values (plugin_abi.hpp has
// typed accessors). Plain data with no msomni dependency, so the config layer reads it too.
//
//   MSOMNI_MODEL_PLUGIN_KEYS(
//       msomni::model::integer_key("my_hidden", 1, 4096, 64, "hidden width"),
//       msomni::model::float_key("my_dropout", 0.0, 0.9, 0.1, "dropout rate"),
//       msomni::model::bool_key("my_tied", false, "tie input and output embeddings"),
//       msomni::model::string_key("my_init", "normal", "initialisation scheme"))
#pragma once

#include <cstddef>
#include <cstdint>

namespace msomni::model {

enum class plugin_key_type : int32_t { integer = 0, floating = 1, boolean = 2, string = 3 };

// One row. Strings are NUL-terminated and must live as long as the library is loaded
// (string literals do). Only the fields of the row's type are read.
struct plugin_key {
  const char* name;         // under [model]: letters, digits and '_', at most 64 characters
  plugin_key_type type;
  int64_t int_min;          // integer: the inclusive range and the default
  int64_t int_max;
  int64_t int_default;
  double float_min;         // floating: the inclusive range and the default (finite)
  double float_max;
  double float_default;
  bool bool_default;
  const char* string_default;
  const char* description;  // one line for people reading --dry-run and the docs
};

// The most rows a table may have; a longer one is refused when the config is read.
inline constexpr size_t plugin_keys_max = 256;

constexpr plugin_key integer_key(const char* name, int64_t min, int64_t max, int64_t default_value,
                                 const char* description = "") {
  return {name, plugin_key_type::integer, min, max, default_value, 0, 0, 0, false, "", description};
}
constexpr plugin_key float_key(const char* name, double min, double max, double default_value,
                               const char* description = "") {
  return {name, plugin_key_type::floating, 0, 0, 0, min, max, default_value, false, "", description};
}
constexpr plugin_key bool_key(const char* name, bool default_value, const char* description = "") {
  return {name, plugin_key_type::boolean, 0, 0, 0, 0, 0, 0, default_value, "", description};
}
constexpr plugin_key string_key(const char* name, const char* default_value, const char* description = "") {
  return {name, plugin_key_type::string, 0, 0, 0, 0, 0, 0, false, default_value, description};
}

}  // namespace msomni::model

extern "C" {
// Returns the plugin's key table and writes its length to *count. Optional: a plugin
// without it declares no keys. Called before the register function, possibly in a process
// that never creates a model (the config check of msomni-run), so it must not allocate
// models or start anything.
using msomni_plugin_keys_fn = const msomni::model::plugin_key* (*)(size_t* count);
}

#define MSOMNI_MODEL_PLUGIN_KEYS(...)                                                              \
  extern "C" __attribute__((visibility("default"))) const ::msomni::model::plugin_key*             \
  msomni_plugin_keys(size_t* count) {                                                              \
    static constexpr ::msomni::model::plugin_key msomni_declared_keys[] = {__VA_ARGS__};           \
    *count = sizeof msomni_declared_keys / sizeof msomni_declared_keys[0];                         \
    return msomni_declared_keys;                                                                   \
  }
