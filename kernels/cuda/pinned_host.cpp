// Page-locked host memory through the CUDA runtime (see memory/pinned_host.hpp).
#include "memory/pinned_host.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace msomni::kernels {

void check_pinned_host_device(int device_index) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string("pinned host memory: no usable GPU: ") + cudaGetErrorString(rc));
  if (device_index < 0 || device_index >= count)
    throw std::runtime_error("pinned host memory: device " + std::to_string(device_index) + " requested but " +
                             std::to_string(count) + " present");
}

void* pinned_host_alloc(int device_index, size_t bytes) {
  // The calling thread may be a data stage's, which has no device of its own yet.
  cudaError_t e = cudaSetDevice(device_index);
  void* p = nullptr;
  // Portable: page-locked for every CUDA context, not only the allocating thread's.
  if (e == cudaSuccess) e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (e != cudaSuccess)
    throw std::runtime_error("cudaHostAlloc of " + std::to_string(bytes) + " bytes on device " +
                             std::to_string(device_index) + ": " + cudaGetErrorString(e));
  return p;
}

void pinned_host_free(void* p) noexcept { cudaFreeHost(p); }

}  // namespace msomni::kernels
