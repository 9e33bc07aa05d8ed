// add_into, sum_into (see reduce_kernel.hpp). Built with -O3 (transport/CMakeLists.txt):
// GCC's -O2 leaves these loops scalar, at about a third of the memory bandwidth.
#include "collectives/reduce_kernel.hpp"

namespace msomni::transport {

void add_into(float* __restrict dst, const float* __restrict src, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] += src[i];
}

void sum_into(float* __restrict dst, const float* __restrict a, const float* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = a[i] + b[i];
}

}  // namespace msomni::transport
