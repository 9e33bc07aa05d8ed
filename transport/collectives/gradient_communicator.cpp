// make_gradient_communicator (see gradient_communicator.hpp).
#include "collectives/gradient_communicator.hpp"

namespace msomni::transport {

namespace {

#ifdef MSOMNI_WITH_NCCL
constexpr bool nccl_compiled = true;
#else
constexpr bool nccl_compiled = false;
#endif

}  // namespace

gradient_communicator make_gradient_communicator(communicator& ring, int cuda_device, const nccl_options& options) {
  // Small integers are exact in a float sum.
  float on_gpus = cuda_device >= 0 ? 1.0f : 0.0f;
  ring.all_reduce(std::span<float>(&on_gpus, 1), reduce_op::sum);
  const int count = static_cast<int>(on_gpus);
  gradient_communicator g;
  const auto epoch = " (epoch " + std::to_string(ring.epoch()) + ", " + std::to_string(count) + " of " +
                     std::to_string(ring.size()) + " members on GPUs)";
  if (!gradients_over_nccl(count, ring.size(), nccl_compiled)) {
    const std::string backend = ring.backend();
    g.description = "gradients all-reduced " +
                    (backend == "same-host" ? std::string("through same-host shared memory") : "on the " + backend) +
                    (cuda_device >= 0 ? " through host memory" : "") + epoch;
    return g;
  }
  g.nccl = make_nccl_communicator(ring, cuda_device, options);
  g.description = "gradients all-reduced with NCCL on GPU " + std::to_string(cuda_device) + epoch;
  return g;
}

}  // namespace msomni::transport
