// The CUDA entry points of a CPU-only build: they say why there is no GPU backend.
#include "ops.hpp"

#include <stdexcept>

namespace msomni::kernels {

std::unique_ptr<ops> make_cuda_ops(int) {
  throw std::runtime_error(
      "make_cuda_ops: this build has no CUDA backend (ENABLE_CUDA=OFF or nvcc not found)");
}

bool cuda_compiled() { return false; }

}  // namespace msomni::kernels
