// GPU collectives through NCCL (built when CUDA is present). The NCCL unique id is made by
// rank 0 and travels to the other members over the transport, through a bootstrap
// communicator of the same membership (the UCX ring). Buffers are device memory.
//
// NCCL itself waits forever on a member that died. So the communicator is non-blocking:
// every wait (initialisation, each collective) polls for completion, NCCL's asynchronous
// error and the caller's `abandoned` check, and gives up after `timeout`; a communicator that
// gave up is aborted (ncclCommAbort) and throws collective_error, as the ring does.
#pragma once

#include "collectives/communicator.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace msomni::transport {

// True when this build has NCCL and a CUDA device is usable.
bool nccl_available();

struct nccl_options {
  std::chrono::milliseconds timeout{60000};
  // Polled while waiting: a non-empty reason ends the wait (e.g. the epoch was superseded).
  std::function<std::string()> abandoned;
};

// Collective: every member of `bootstrap` calls it with its own local CUDA device.
// Throws collective_error when NCCL is not built in or initialisation fails.
std::unique_ptr<communicator> make_nccl_communicator(communicator& bootstrap, int cuda_device,
                                                     const nccl_options& options = {});

}  // namespace msomni::transport
