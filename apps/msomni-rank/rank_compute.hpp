// What this rank computes on: the shell around config::choose_device. It gathers the node's
// facts (the GPUs the CUDA runtime shows, CUDA_VISIBLE_DEVICES, MSOMNI_JOB_GPUS, the local
// index the node agent gave it in MSOMNI_NODE_SLOT), lets the core decide, and says what it
// decided in one COMPUTE line of the rank log.
#pragma once

#include "config/device_choice.hpp"
#include "model/model.hpp"

#include <memory>
#include <memory_resource>
#include <string>

namespace msomni::apps {

struct rank_compute {
  model::model_context context;  // for model::create_model
  config::device_choice choice;
  std::string log_line;          // "COMPUTE cuda, GPU 0 (...)" or "COMPUTE cpu, N threads (...)"
  // Where the data sources pack the model's batches: pinned host memory of the GPU on a CUDA
  // rank (asynchronous uploads), ordinary pooled memory on the CPU. Keep it alive as long as
  // any batch source or batch.
  std::shared_ptr<std::pmr::memory_resource> batch_memory;
  int cuda_device() const { return choice.cuda ? choice.gpu : -1; }
};

// `threads`: the CPU threads the rank computes with on the CPU. `default_local_index` stands
// when no agent set MSOMNI_NODE_SLOT. Throws std::runtime_error with the reason when
// training.device = "cuda" and this rank has no GPU of its own.
rank_compute decide_rank_compute(const config::job_config& cfg, int64_t threads, int64_t default_local_index);

}  // namespace msomni::apps
