// The element-wise sums both all-reduce paths use, compiled for vector units (their own
// translation unit at -O3). One IEEE addition per element either way, so the paths' results
// are the same bits.
#pragma once

#include <cstddef>

namespace msomni::transport {

// dst[i] = dst[i] + src[i]
void add_into(float* __restrict dst, const float* __restrict src, size_t count);
// dst[i] = a[i] + b[i]
void sum_into(float* __restrict dst, const float* __restrict a, const float* __restrict b, size_t count);

}  // namespace msomni::transport
