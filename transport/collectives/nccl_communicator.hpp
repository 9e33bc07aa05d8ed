// GPU collectives through NCCL (built when CUDA is present). The NCCL unique id is made by
// rank 0 and travels to the other members over the transport, through a bootstrap
// communicator of the same membership (the UCX ring). Buffers are device memory.
#pragma once

#include "collectives/communicator.hpp"

#include <memory>

namespace msomni::transport {

// True when this build has NCCL and a CUDA device is usable.
bool nccl_available();

// Collective: every member of `bootstrap` calls it with its own local CUDA device.
// Throws collective_error when NCCL is not built in or initialisation fails.
std::unique_ptr<communicator> make_nccl_communicator(communicator& bootstrap, int cuda_device);

}  // namespace msomni::transport
