// The gradient all-reduce of one membership epoch. When every member computes on a GPU and
// this build has NCCL, an NCCL communicator over the epoch's ring (its unique id travels
// over UCX) all-reduces the device gradients in place; otherwise there is none and the
// trainer all-reduces on the ring through host memory (the CPU path, unchanged). The members
// agree first, with one all-reduce of a count, so they all take the same path even when a
// node's ranks decided differently (training.device = "auto" on a node without a GPU).
#pragma once

#include "collectives/nccl_communicator.hpp"

#include <memory>
#include <string>

namespace msomni::transport {

// The backend the members agreed on: NCCL only when all `size` members are on a GPU. Pure.
inline bool gradients_over_nccl(int members_on_gpus, int size, bool nccl_compiled) {
  return nccl_compiled && size > 0 && members_on_gpus == size;
}

struct gradient_communicator {
  std::unique_ptr<communicator> nccl;  // null: all-reduce on the ring through host memory
  std::string description;             // one line for the rank log
};

// Collective over `ring`: every member calls it once per epoch, with its CUDA ordinal or -1
// when it computes on the CPU. Throws collective_error as the ring and NCCL do.
gradient_communicator make_gradient_communicator(communicator& ring, int cuda_device, const nccl_options& options);

}  // namespace msomni::transport
