// Checking a torch model before a start (see torch_module_check.hpp).
#include "torch_module/torch_module_check.hpp"

#include "config/config_loader.hpp"
#include "torch_module/probe_batch.hpp"
#include "torch_module/torch_module_error.hpp"
#include "torch_module/torch_module_model.hpp"

#include <filesystem>
#include <sstream>

namespace msomni::models {

std::vector<config::config_error> check_torch_module(const config::job_config& cfg, torch_module_summary& out) {
  out = torch_module_summary{};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(cfg.model.torch_file, ec))
    return {config::located(cfg, "model.torch_file", cfg.model.torch_file + ": no such file")};
  try {
    const model::model_context context{cfg.model, static_cast<uint64_t>(cfg.training.seed), model::compute_device::cpu,
                                       0, 1};
    torch_module_model m(context);
    const auto probe = make_probe_batch(cfg);
    const double loss = m.probe(probe);
    out.description = m.description();
    out.tensors = m.parameters().size();
    out.parameters = m.parameter_count();
    out.memory = m.estimate_memory(cfg.training.micro_batch, cfg.model.max_seq_len);
    // The probe batch has the job's largest shape: what autograd saved for it is the module's
    // activations at their largest.
    out.memory.activation_bytes += static_cast<int64_t>(m.last_activation_bytes());
    std::ostringstream os;
    os << "micro-batch " << probe.batch << " x (" << probe.max_patches << " patches + " << probe.text_len
       << " tokens), loss " << loss;
    out.probe = os.str();
  } catch (const torch_module_error& e) {
    return {config::located(cfg, e.key, e.what())};
  } catch (const std::exception& e) {
    return {config::located(cfg, "model.torch_file", e.what())};
  }
  return {};
}

}  // namespace msomni::models
