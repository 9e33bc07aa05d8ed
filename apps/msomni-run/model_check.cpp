// Checking the job's model before a start and describing it for --dry-run (model_check.hpp).
#include "model_check.hpp"

#include "builtin_models.hpp"
#include "config/config_loader.hpp"
#include "config/plugin_library.hpp"
#include "model/model_registry.hpp"
#include "torch_module/torch_module_check.hpp"

#include <filesystem>
#include <sstream>

namespace msomni::apps {

namespace {

std::string mib(int64_t bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(bytes < (int64_t{1} << 20) ? 3 : 1);
  os << double(bytes) / double(1 << 20) << " MiB";
  return os.str();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

std::vector<config::config_error> check_model(const config::job_config& cfg, bool build, model_summary& out) {
  out = model_summary{};
  out.name = cfg.model.name;
  model::model_registry registry;
  models::register_builtin_models(registry);
  const auto builtin = registry.names();
  if (cfg.model.name == "torch") {  // refused here, with the module's FILE:LINE, or not at all
    models::torch_module_summary torch;
    if (auto problems = models::check_torch_module(cfg, torch); !problems.empty()) return problems;
    out.torch_module = torch.description + "; probe " + torch.probe;
    out.parameters = torch.parameters;
    out.memory = torch.memory;
    out.built = true;
    return {};
  }
  const auto& plugin = cfg.model.plugin;
  // The rank loads the plugin only when the name is not built in; do the same here.
  if (!plugin.empty() && !registry.contains(cfg.model.name)) {
    try {
      const auto base_dir = std::filesystem::path(cfg.source_path).parent_path().string();
      const auto info = model::load_model_plugin(plugin, base_dir, registry);
      out.plugin_path = info.path;
      out.registered = info.added;
      for (const auto& k : config::declared_plugin_keys(config::open_model_plugin(info.path)))
        out.declared_keys.push_back("model." + k.name + ": " + config::describe(k) +
                                    (k.description.empty() ? "" : ": " + k.description));
    } catch (const std::exception& e) {
      return {config::located(cfg, "model.plugin", e.what())};
    }
    if (!registry.contains(cfg.model.name))
      return {config::located(cfg, "model.name",
                              "\"" + cfg.model.name + "\" is neither built in (" + joined(builtin) +
                                  ") nor registered by model.plugin " + out.plugin_path + " (it registers " +
                                  joined(out.registered) + ")")};
  } else if (!registry.contains(cfg.model.name)) {
    return {config::located(cfg, "model.name",
                            "unknown model \"" + cfg.model.name + "\" (built in: " + joined(builtin) +
                                "; set model.plugin to load one from a shared library)")};
  }
  if (!build || out.plugin_path.empty()) return {};
  try {
    const model::model_context context{cfg.model, static_cast<uint64_t>(cfg.training.seed), model::compute_device::cpu,
                                       0, 1};
    auto m = registry.create(context);
    out.parameters = m->parameter_count();
    out.memory = m->estimate_memory(cfg.training.micro_batch, cfg.model.max_seq_len);
    out.built = true;
  } catch (const std::exception& e) {
    return {config::located(cfg, "model.name", "plugin model \"" + cfg.model.name + "\" cannot be built: " + e.what())};
  }
  return {};
}

std::string render_model_summary(const model_summary& s, const config::job_config& cfg) {
  std::ostringstream os;
  if (!s.torch_module.empty()) {
    os << "  model check:  torch module " << s.torch_module << "\n";
    os << "                " << s.parameters << " parameters; memory per rank " << mib(s.memory.total())
       << " (parameters, gradients, AdamW state, and " << mib(s.memory.activation_bytes)
       << " for the probe micro-batch: its shared memory and the activations autograd saved for it)\n";
    return os.str();
  }
  if (s.plugin_path.empty()) {
    os << "  model check:  " << s.name << " is built in\n";
    return os.str();
  }
  os << "  model check:  " << s.name << " from plugin " << s.plugin_path << " (registers " << joined(s.registered)
     << ")\n";
  for (const auto& k : s.declared_keys) os << "                declares " << k << "\n";
  if (s.built) {
    const auto& m = s.memory;
    os << "                " << s.parameters << " parameters; memory per rank " << mib(m.total()) << " (parameters "
       << mib(m.parameter_bytes) << ", gradients " << mib(m.gradient_bytes) << ", optimizer " << mib(m.optimizer_bytes)
       << ", activations " << mib(m.activation_bytes) << " for micro-batch " << cfg.training.micro_batch << " x "
       << cfg.model.max_seq_len << " positions)\n";
  }
  return os.str();
}

}  // namespace msomni::apps
