// Page-locked host memory of one GPU, for the batch memory pool (batch_memory.cpp). Built
// from cuda/pinned_host.cpp with CUDA; without it every call throws saying so.
#pragma once

#include <cstddef>

namespace msomni::kernels {

// Throws std::runtime_error with CUDA's reason (no such device, out of page-locked memory).
void check_pinned_host_device(int device_index);
void* pinned_host_alloc(int device_index, size_t bytes);
void pinned_host_free(void* p) noexcept;

}  // namespace msomni::kernels
