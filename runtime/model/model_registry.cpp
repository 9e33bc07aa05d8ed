// Model registry and the plugin loader (see model_registry.hpp).
#include "model/model_registry.hpp"

#include "config/plugin_library.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace msomni::model {

void model_registry::add_model(const std::string& name, const std::string& description,
                               model_factory factory) {
  if (name.empty()) throw std::invalid_argument("model registry: empty model name");
  if (!factory)
    throw std::invalid_argument("model registry: model '" + name + "' has no factory");
  if (contains(name))
    throw std::invalid_argument("model registry: model '" + name + "' is already registered");
  entries_.emplace(name, entry{description, std::move(factory)});
}

std::vector<std::string> model_registry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

std::string model_registry::description(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? std::string() : it->second.description;
}

std::unique_ptr<trainable_model> model_registry::create(const model_context& context) const {
  const std::string& name = context.config.name;
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("model.name: unknown model '" + name + "' (registered: " +
                                (known.empty() ? "none" : known) +
                                "; set model.plugin to load one from a shared library)");
  }
  auto m = it->second.factory(context);
  if (!m) throw std::runtime_error("model.name: factory of '" + name + "' returned nothing");
  return m;
}

namespace {

// Records the names a plugin adds so the caller can report them.
class recording_host final : public model_host {
 public:
  explicit recording_host(model_registry& r) : registry_(r) {}
  void add_model(const std::string& name, const std::string& description,
                 model_factory factory) override {
    registry_.add_model(name, description, std::move(factory));
    added.push_back(name);
  }
  std::vector<std::string> added;

 private:
  model_registry& registry_;
};

}  // namespace

plugin_info load_model_plugin(const std::string& plugin, const std::string& base_dir,
                              model_registry& registry) {
  const std::string where = "model.plugin '" + plugin + "'";
  if (plugin.empty()) throw std::runtime_error("model.plugin: empty plugin name");
  const std::string path = config::resolve_plugin_path(plugin, base_dir);
  void* handle = nullptr;
  try {
    handle = config::open_model_plugin(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(where + ": " + e.what());
  }
  auto reg = reinterpret_cast<msomni_model_plugin_register_fn>(dlsym(handle, "msomni_model_plugin_register"));
  recording_host host(registry);
  char error[512] = {0};
  if (reg(&host, error, sizeof error) != 0)
    throw std::runtime_error(where + ": registration failed: " +
                             (error[0] ? std::string(error) : std::string("no reason given")));
  if (host.added.empty())
    throw std::runtime_error(where + ": registered no models");
  return plugin_info{path, host.added};
}

std::unique_ptr<trainable_model> create_model(const model_context& context, model_registry& registry,
                                    const std::string& base_dir) {
  if (!context.config.plugin.empty() && !registry.contains(context.config.name))
    load_model_plugin(context.config.plugin, base_dir, registry);
  return registry.create(context);
}

}  // namespace msomni::model
