// Helpers shared by the kernel tests: seeded random inputs, finite-difference gradient
// checks, tensor comparisons with per-tensor tolerances, and the GPU-or-skip decision.
#pragma once

#include "support/test_skip.hpp"

#include "core/rng.hpp"
#include "device/device_info.hpp"
#include "ops.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace msomni::test {

inline std::vector<float> random_vector(size_t n, uint64_t seed, const char* purpose,
                                        float scale = 1.0f) {
  auto rng = rng_stream::derive(seed, purpose);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * rng.normal();
  return v;
}

// sum_i y[i] * r[i] in double: the scalar loss whose gradient w.r.t. y is r.
inline double weighted_sum(const std::vector<float>& y, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * r[i];
  return s;
}

struct fd_options {
  double eps = 1e-2;
  double rtol = 2e-2;
  double atol = 2e-3;
  size_t max_coords = 48;  // spread evenly over the tensor
};

// Central differences of `loss` w.r.t. a sample of x's coordinates, against `analytic`.
// Returns the worst violation ratio (|a - n| / (atol + rtol * |n|)); <= 1 passes.
inline double check_gradient(const std::string& what, std::vector<float>& x,
                             const std::vector<float>& analytic,
                             const std::function<double()>& loss, fd_options o = {}) {
  REQUIRE(x.size() == analytic.size());
  const size_t stride = x.size() <= o.max_coords ? 1 : x.size() / o.max_coords;
  double worst = 0;
  for (size_t i = 0; i < x.size(); i += stride) {
    const float saved = x[i];
    x[i] = saved + static_cast<float>(o.eps);
    const double up = loss();
    x[i] = saved - static_cast<float>(o.eps);
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * o.eps);
    const double ratio = std::abs(analytic[i] - numeric) / (o.atol + o.rtol * std::abs(numeric));
    if (ratio > 1)
      FAIL_CHECK(what << "[" << i << "]: analytic " << analytic[i] << " vs numeric " << numeric);
    worst = std::max(worst, ratio);
  }
  return worst;
}

struct tensor_error {
  double max_abs = 0;
  double rel_l2 = 0;  // ||a - b|| / max(||b||, tiny)
};

inline tensor_error compare(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff2 = 0, ref2 = 0, max_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff2 += d * d;
    ref2 += static_cast<double>(b[i]) * b[i];
    max_abs = std::max(max_abs, std::abs(d));
  }
  return {max_abs, std::sqrt(diff2) / std::max(std::sqrt(ref2), 1e-30)};
}

// The GPU backend when a usable GPU exists; otherwise nullptr after recording the skip, so
// ctest reports the case as Skipped, never as a parity pass. The caller returns at once.
inline std::unique_ptr<kernels::ops> gpu_or_skip(const char* test) {
  const auto report = kernels::probe_devices();
  if (report.gpus.empty()) {
    msomni::testing::record_skip(std::string(test) + ": no usable GPU (" + report.status + ")");
    return nullptr;
  }
  return kernels::make_cuda_ops(report.gpus.front().index);
}

template <class T>
kernels::device_buffer<T> to_device(kernels::ops& o, const std::vector<T>& host) {
  kernels::device_buffer<T> buf(o, host.size());
  if (!host.empty()) o.upload(buf.get(), host.data(), buf.bytes());
  return buf;
}

template <class T>
std::vector<T> to_host(kernels::ops& o, const kernels::device_buffer<T>& buf) {
  std::vector<T> host(buf.size());
  if (!host.empty()) o.download(host.data(), buf.get(), buf.bytes());
  return host;
}

}  // namespace msomni::test
