// The element-wise sum both all-reduce paths use: dst[i] = dst[i] + src[i], compiled for
// vector units (its own translation unit at -O3), so either path's result is the same bits.
#pragma once

#include <cstddef>

namespace msomni::transport {

void add_into(float* __restrict dst, const float* __restrict src, size_t count);

}  // namespace msomni::transport
