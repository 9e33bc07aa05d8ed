// Opening model plugins and checking their key tables (see plugin_library.hpp).
#include "config/plugin_library.hpp"

#include "model/plugin_abi.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

namespace msomni::config {

namespace {

constexpr size_t plugin_key_name_max = 64;

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string name_problem(const char* name) {
  if (!name || !*name) return "has an empty name";
  const std::string s(name);
  if (s.size() > plugin_key_name_max)
    return "name \"" + s.substr(0, plugin_key_name_max) + "...\" is longer than " +
           std::to_string(plugin_key_name_max) + " characters";
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_') return "name \"" + s + "\" may contain only letters, digits and '_'";
  return {};
}

plugin_key_spec checked(const model::plugin_key& row, size_t index) {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("key table row " + std::to_string(index) + " " + why);
  };
  if (const auto problem = name_problem(row.name); !problem.empty()) fail(problem);
  plugin_key_spec k;
  k.name = row.name;
  k.type = row.type;
  k.description = row.description ? row.description : "";
  auto fail_key = [&](const std::string& why) { fail("(\"" + k.name + "\") " + why); };
  switch (row.type) {
    case model::plugin_key_type::integer:
      if (row.int_min > row.int_max || row.int_default < row.int_min || row.int_default > row.int_max)
        fail_key("has default " + std::to_string(row.int_default) + " outside its range [" +
                 std::to_string(row.int_min) + ", " + std::to_string(row.int_max) + "]");
      k.int_min = row.int_min, k.int_max = row.int_max, k.int_default = row.int_default;
      break;
    case model::plugin_key_type::floating:
      if (!std::isfinite(row.float_min) || !std::isfinite(row.float_max) || !std::isfinite(row.float_default) ||
          row.float_min > row.float_max || row.float_default < row.float_min || row.float_default > row.float_max)
        fail_key("has default " + number_text(row.float_default) + " outside its finite range [" +
                 number_text(row.float_min) + ", " + number_text(row.float_max) + "]");
      k.float_min = row.float_min, k.float_max = row.float_max, k.float_default = row.float_default;
      break;
    case model::plugin_key_type::boolean:
      k.bool_default = row.bool_default;
      break;
    case model::plugin_key_type::string:
      if (!row.string_default) fail_key("has no default string");
      k.string_default = row.string_default;
      break;
    default:
      fail_key("has unknown type " + std::to_string(static_cast<int32_t>(row.type)) +
               " (integer, floating, boolean or string)");
  }
  return k;
}

}  // namespace

std::string resolve_plugin_path(const std::string& plugin, const std::string& base_dir) {
  if (plugin.find('/') == std::string::npos) return plugin;
  std::filesystem::path p(plugin);
  if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
  auto out = p.lexically_normal().string();
  // "./libx.so" normalises to "libx.so", which dlopen would look up on its search path.
  if (out.find('/') == std::string::npos) out = "./" + out;
  return out;
}

void* open_model_plugin(const std::string& path) {
  if (path.empty()) throw std::runtime_error("empty plugin name");
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load " + path + ": " + (why ? why : "unknown dlopen error"));
  }
  auto version = reinterpret_cast<msomni_model_plugin_version_fn>(dlsym(handle, "msomni_model_plugin_version"));
  if (!version || !dlsym(handle, "msomni_model_plugin_register"))
    throw std::runtime_error(path +
                             " does not export msomni_model_plugin_version and "
                             "msomni_model_plugin_register (define it with "
                             "MSOMNI_MODEL_PLUGIN from model/plugin_abi.hpp)");
  if (const int v = version(); v != model::plugin_api_version)
    throw std::runtime_error(path + " was built for model plugin API version " + std::to_string(v) +
                             ", this runtime speaks version " + std::to_string(model::plugin_api_version) +
                             "; rebuild the plugin against these headers");
  return handle;
}

std::vector<plugin_key_spec> declared_plugin_keys(void* handle) {
  auto keys = reinterpret_cast<msomni_plugin_keys_fn>(dlsym(handle, "msomni_plugin_keys"));
  if (!keys) return {};
  size_t count = 0;
  const model::plugin_key* rows = keys(&count);
  if (count > model::plugin_keys_max)
    throw std::runtime_error("key table has " + std::to_string(count) + " rows, more than " +
                             std::to_string(model::plugin_keys_max));
  if (count > 0 && !rows) throw std::runtime_error("key table is null but claims " + std::to_string(count) + " rows");
  std::vector<plugin_key_spec> out;
  std::set<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    out.push_back(checked(rows[i], i));
    if (!names.insert(out.back().name).second)
      throw std::runtime_error("key table declares \"" + out.back().name + "\" twice");
  }
  return out;
}

std::string describe(const plugin_key_spec& k) {
  switch (k.type) {
    case model::plugin_key_type::integer:
      return "integer in [" + std::to_string(k.int_min) + ", " + std::to_string(k.int_max) + "], default " +
             std::to_string(k.int_default);
    case model::plugin_key_type::floating:
      return "float in [" + number_text(k.float_min) + ", " + number_text(k.float_max) + "], default " +
             number_text(k.float_default);
    case model::plugin_key_type::boolean:
      return std::string("boolean, default ") + (k.bool_default ? "true" : "false");
    case model::plugin_key_type::string:
      return "string, default \"" + k.string_default + "\"";
  }
  return "?";
}

}  // namespace msomni::config
