// Compute probes: the CPU backend's GEMM against a naive reference and its speed, the CUDA
// devices, and (with a GPU) the CUDA GEMM's parity with the same reference.
#include "health_probes.hpp"

#include "device/device_info.hpp"
#include "ops.hpp"

#include <chrono>
#include <cmath>
#include <vector>

namespace msomni::health {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr double gemm_tolerance = 1e-3;  // float32 sums of n <= 512 products of values in [-1, 1]
constexpr double min_cpu_gflops = 2.0;   // one core of anything a job should run on

// Values in [-1, 1] from a fixed recurrence, so both sides multiply the same matrices.
std::vector<float> matrix(int64_t n, uint32_t seed) {
  std::vector<float> v(size_t(n * n));
  uint32_t x = seed;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = float(int32_t(x >> 8) % 2001 - 1000) / 1000.0f;
  }
  return v;
}

std::vector<double> naive_product(const std::vector<float>& a, const std::vector<float>& b, int64_t n) {
  std::vector<double> c(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      const double aik = a[size_t(i * n + k)];
      for (int64_t j = 0; j < n; ++j) c[size_t(i * n + j)] += aik * b[size_t(k * n + j)];
    }
  return c;
}

// C = A * B on `backend` (`repeats` timed runs after one for parity): the fact for both rules.
gemm_fact measure_gemm(kernels::ops& backend, int64_t n, int repeats) {
  gemm_fact f;
  f.n = n;
  f.tolerance = gemm_tolerance;
  const auto a = matrix(n, 1), b = matrix(n, 2);
  const size_t bytes = sizeof(float) * size_t(n * n);
  kernels::device_buffer<float> da(backend, size_t(n * n)), db(backend, size_t(n * n)), dc(backend, size_t(n * n));
  backend.upload(da.get(), a.data(), bytes);
  backend.upload(db.get(), b.data(), bytes);
  backend.gemm(false, false, n, n, n, 1.0f, da.get(), n, db.get(), n, 0.0f, dc.get(), n);
  backend.synchronize();
  std::vector<float> c(size_t(n * n));
  backend.download(c.data(), dc.get(), bytes);
  const auto ref = naive_product(a, b, n);
  for (size_t i = 0; i < c.size(); ++i) {
    const double d = std::fabs(double(c[i]) - ref[i]);
    if (!(d <= f.max_abs_error)) f.max_abs_error = std::isnan(d) ? INFINITY : std::max(f.max_abs_error, d);
  }
  const auto t0 = clock_type::now();
  for (int r = 0; r < repeats; ++r)
    backend.gemm(false, false, n, n, n, 1.0f, da.get(), n, db.get(), n, 0.0f, dc.get(), n);
  backend.synchronize();
  const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  f.gflops = s > 0 ? 2.0 * double(n) * double(n) * double(n) * repeats / s / 1e9 : 0.0;
  return f;
}

}  // namespace

void probe_compute(const config::job_config& cfg, const health_options& o, const add_fn& add) {
  const bool quick = o.level == health_level::quick;
  const int64_t n = quick ? 256 : 512;
  gemm_fact cpu;
  try {
    // One thread: the per-core figure, whatever the node's other load.
    auto backend = kernels::make_cpu_ops(1);
    cpu = measure_gemm(*backend, n, quick ? 3 : 10);
  } catch (const std::exception& e) {
    cpu.n = n;
    cpu.error = std::string("CPU backend: ") + e.what();
  }
  add(judge_gemm_parity("compute.gemm.parity", cpu));
  add(judge_gemm_speed(cpu, min_cpu_gflops));

  const auto dev = kernels::probe_devices();
  gpu_fact g;
  g.cuda_compiled = dev.cuda_compiled;
  g.devices = int64_t(dev.gpus.size());
  g.status = dev.status;
  g.cuda_required = cfg.training.device == "cuda";
  for (const auto& d : dev.gpus)
    if (g.smallest_memory_bytes == 0 || d.memory_bytes < g.smallest_memory_bytes) g.smallest_memory_bytes = d.memory_bytes;
  add(judge_gpu(g));
  if (dev.gpus.empty()) {
    add(skipped("compute.cuda.parity", no_gpu_reason(g)));
    return;
  }
  gemm_fact gpu;
  try {
    auto backend = kernels::make_cuda_ops(dev.gpus.front().index);
    gpu = measure_gemm(*backend, n, quick ? 3 : 10);
  } catch (const std::exception& e) {
    gpu.n = n;
    gpu.error = std::string("CUDA backend on device ") + std::to_string(dev.gpus.front().index) + ": " + e.what();
  }
  add(judge_gemm_parity("compute.cuda.parity", gpu));
}

}  // namespace msomni::health
