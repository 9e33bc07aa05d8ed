// The C entry points a model plugin (.so named by model.plugin) exports. The loader checks
// the API version first, then calls the register function once with the host registry.
// Plugins must be built with the same compiler and msomni headers as the runtime: C++
// types (std::string, std::function, the model vtable) cross the boundary.
//
//   MSOMNI_MODEL_PLUGIN(host) {
//     host.add_model("my-model", "what it is",
//                    [](const msomni::model::model_context& c) { return make_my_model(c); });
//   }
//
// A plugin's own [model] keys are declared with MSOMNI_MODEL_PLUGIN_KEYS (plugin_keys.hpp)
// and read in the factory with plugin_int / plugin_float / plugin_bool / plugin_string.
#pragma once

#include "model/model.hpp"
#include "model/plugin_keys.hpp"

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>

namespace msomni::model {

// Bump when model.hpp, micro_batch.hpp, model_state.hpp, plugin_keys.hpp, model_host or
// config::model_section (inside model_context) change shape.
inline constexpr int plugin_api_version = 3;

using model_factory = std::function<std::unique_ptr<trainable_model>(const model_context&)>;

// What a plugin sees of the registry: pure virtual, so calling it needs no symbols.
class model_host {
 public:
  virtual ~model_host() = default;
  // Throws std::invalid_argument when `name` is already registered.
  virtual void add_model(const std::string& name, const std::string& description,
                         model_factory factory) = 0;
};

namespace detail {
template <class T>
const T& plugin_value_of(const model_context& c, const std::string& name, const char* type) {
  auto it = c.config.plugin_values.find(name);
  const T* v = it == c.config.plugin_values.end() ? nullptr : std::get_if<T>(&it->second);
  if (!v)
    throw std::invalid_argument("model." + name + " is not a declared " + type +
                                " key of this plugin (declare it with MSOMNI_MODEL_PLUGIN_KEYS)");
  return *v;
}
}  // namespace detail

// The value of a key the plugin declared, as the config resolved it (its default when the
// config left it out). Throws std::invalid_argument when `name` was not declared with
// that type.
inline int64_t plugin_int(const model_context& c, const std::string& name) {
  return detail::plugin_value_of<int64_t>(c, name, "integer");
}
inline double plugin_float(const model_context& c, const std::string& name) {
  return detail::plugin_value_of<double>(c, name, "float");
}
inline bool plugin_bool(const model_context& c, const std::string& name) {
  return detail::plugin_value_of<bool>(c, name, "boolean");
}
inline const std::string& plugin_string(const model_context& c, const std::string& name) {
  return detail::plugin_value_of<std::string>(c, name, "string");
}

namespace detail {
inline void copy_error(const char* text, char* out, size_t size) {
  if (!out || size == 0) return;
  size_t i = 0;
  for (; text[i] && i + 1 < size; ++i) out[i] = text[i];
  out[i] = '\0';
}
}  // namespace detail

}  // namespace msomni::model

extern "C" {
// Returns plugin_api_version as the plugin was compiled.
using msomni_model_plugin_version_fn = int (*)();
// Registers the plugin's models; returns 0 on success, else writes why (NUL-terminated,
// truncated to error_size) into `error`. Exceptions must not escape.
using msomni_model_plugin_register_fn = int (*)(msomni::model::model_host* host, char* error,
                                                size_t error_size);
}

#define MSOMNI_MODEL_PLUGIN(host_name)                                                    \
  static void msomni_model_plugin_body(::msomni::model::model_host& host_name);          \
  extern "C" __attribute__((visibility("default"))) int msomni_model_plugin_version() {  \
    return ::msomni::model::plugin_api_version;                                           \
  }                                                                                       \
  extern "C" __attribute__((visibility("default"))) int msomni_model_plugin_register(    \
      ::msomni::model::model_host* host, char* error, size_t error_size) {                \
    try {                                                                                 \
      msomni_model_plugin_body(*host);                                                    \
      return 0;                                                                           \
    } catch (const std::exception& e) {                                                   \
      ::msomni::model::detail::copy_error(e.what(), error, error_size);                   \
    } catch (...) {                                                                       \
      ::msomni::model::detail::copy_error("unknown exception", error, error_size);        \
    }                                                                                     \
    return 1;                                                                             \
  }                                                                                       \
  static void msomni_model_plugin_body(::msomni::model::model_host& host_name)
