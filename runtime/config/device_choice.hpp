// Which device one rank computes on (training.device = auto | cpu | cuda), decided from facts
// the shell gathers: what the CUDA runtime enumerates on the rank's node, the environment that
// narrows it (CUDA_VISIBLE_DEVICES, MSOMNI_JOB_GPUS) and the rank's local index among the
// ranks of its node. Pure: no driver calls, no environment reads.
//
// A CUDA rank binds one GPU: the local_index-th of the node's usable set. The usable set is
//   - none when the build has no CUDA or the runtime enumerates no device;
//   - every device the runtime enumerates when CUDA_VISIBLE_DEVICES is set (the runtime has
//     already narrowed and renumbered them; MSOMNI_JOB_GPUS is then not applied again);
//   - otherwise, with MSOMNI_JOB_GPUS (the scheduler's cluster-wide GPU ids, node-contiguous),
//     each id modulo the node's device count, in the order given (the scheduler numbers a
//     node's GPUs consecutively, so this holds when its gpus-per-node is the node's count);
//   - otherwise every enumerated device.
#pragma once

#include "config/config_error.hpp"
#include "config/job_config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msomni::config {

struct node_gpu_facts {
  bool cuda_compiled = false;
  std::vector<std::string> devices;                 // names, in CUDA runtime order (ordinal = position)
  std::string probe_status;                         // "ok", or why the runtime offers none
  std::optional<std::string> cuda_visible_devices;  // CUDA_VISIBLE_DEVICES, when set
  std::optional<std::string> job_gpus;              // MSOMNI_JOB_GPUS, when set
};

struct device_choice {
  bool cuda = false;
  int gpu = -1;          // the CUDA ordinal to bind when cuda
  bool refused = false;  // training.device = "cuda" and no GPU for this rank
  std::string reason;    // cuda: which GPU and why; cpu: why not a GPU (empty for "cpu")
};

// `setting` is training.device ("auto", "cpu" or "cuda", as the schema allows).
device_choice choose_device(const std::string& setting, const node_gpu_facts& facts, int64_t local_index);

// The ordinals a CUDA rank of this node may bind, in local-index order, or the reason there
// are none (nullopt and `why` set).
std::optional<std::vector<int>> usable_gpus(const node_gpu_facts& facts, std::string& why);

// msomni-run's check before anything starts: on the local node (no [[cluster.nodes]]) every
// rank it may run (elasticity.max_replicas slots) needs a GPU when training.device = "cuda".
// One error at training.device when not; empty when it fits (or the ranks run elsewhere).
std::vector<config_error> check_devices(const job_config& cfg, const node_gpu_facts& local);

// What a rank of the local node will compute on, for --dry-run: "cuda, GPU 0 (NAME)" or
// "cpu, <cpu_text>" with auto's reason.
std::string describe_local_compute(const job_config& cfg, const node_gpu_facts& local, int64_t local_index,
                                   const std::string& cpu_text);

}  // namespace msomni::config
