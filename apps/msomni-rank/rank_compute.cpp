// decide_rank_compute (see rank_compute.hpp).
#include "rank_compute.hpp"

#include "device/gpu_facts.hpp"
#include "ops.hpp"

#include <stdexcept>

namespace msomni::apps {

rank_compute decide_rank_compute(const config::job_config& cfg, int64_t threads, int64_t default_local_index) {
  const auto local_index = kernels::local_rank_index(default_local_index);
  const auto facts = kernels::gather_gpu_facts();
  rank_compute rc;
  // A torch model computes on the CPU (docs/torch_models.md): "auto" means the CPU for it.
  rc.choice = config::choose_device(cfg.model.name == "torch" ? std::string("cpu") : cfg.training.device, facts, local_index);
  const auto& c = rc.choice;
  if (c.refused)
    throw std::runtime_error("training.device = \"cuda\", but " + c.reason + "; use \"auto\" or \"cpu\" to train on the CPU");
  rc.context = model::model_context{cfg.model, static_cast<uint64_t>(cfg.training.seed),
                                    c.cuda ? model::compute_device::cuda : model::compute_device::cpu, c.cuda ? c.gpu : 0,
                                    static_cast<int>(threads)};
  rc.batch_memory = kernels::make_batch_memory(c.cuda ? kernels::backend_kind::cuda : kernels::backend_kind::cpu, c.gpu);
  const std::string setting = "training.device=" + cfg.training.device;
  if (c.cuda)
    rc.log_line = "COMPUTE cuda, GPU " + std::to_string(c.gpu) + " (" + facts.devices[static_cast<size_t>(c.gpu)] + ") (" +
                  setting + ": " + c.reason + ")";
  else
    rc.log_line = "COMPUTE cpu, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
                  (c.reason.empty() ? "" : " (" + setting + ": " + c.reason + ")");
  return rc;
}

}  // namespace msomni::apps
