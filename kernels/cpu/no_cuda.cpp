// The CUDA entry points of a CPU-only build: they say why there is no GPU backend.
#include "memory/pinned_host.hpp"
#include "ops.hpp"

#include <stdexcept>

namespace msomni::kernels {

std::unique_ptr<ops> make_cuda_ops(int, std::shared_ptr<memory_account>) {
  throw std::runtime_error(
      "make_cuda_ops: this build has no CUDA backend (ENABLE_CUDA=OFF or nvcc not found)");
}

bool cuda_compiled() { return false; }

namespace {
[[noreturn]] void no_pinned_memory() {
  throw std::runtime_error(
      "pinned host memory: this build has no CUDA backend (ENABLE_CUDA=OFF or nvcc not found)");
}
}  // namespace
void check_pinned_host_device(int) { no_pinned_memory(); }
void* pinned_host_alloc(int, size_t) { no_pinned_memory(); }
void pinned_host_free(void*) noexcept {}

}  // namespace msomni::kernels
