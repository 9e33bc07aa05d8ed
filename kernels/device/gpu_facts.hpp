// The facts a rank's device choice is made from (config/device_choice.hpp), gathered on
// this machine: what the CUDA runtime enumerates and the environment that narrows it.
#pragma once

#include "config/device_choice.hpp"

namespace msomni::kernels {

// Probes the devices (never throws) and reads CUDA_VISIBLE_DEVICES and MSOMNI_JOB_GPUS.
config::node_gpu_facts gather_gpu_facts();

// The rank's index among the ranks of its node: MSOMNI_NODE_SLOT, set by the node agent
// that started it, else `fallback`. Throws std::invalid_argument when it is not a number.
int64_t local_rank_index(int64_t fallback);

}  // namespace msomni::kernels
