// msomni's optimizer for flat-buffer models: global-norm gradient clipping and AdamW, with
// optimizer_settings::gradient_scale applied first and a non-finite gradient norm skipping
// the update. The arithmetic (float element updates, the norm's sum in double over fixed
// 4096-float chunks) is the one fuyu-tiny's CPU path runs, operation for operation, so a
// model built on it trains bit-identically for any thread count.
//
//   int64_t step = 0;  // optimizer steps taken; part of the checkpoint (flat_state.hpp)
//   auto report = adamw_step(layout, settings, {params, grads, adam_m, adam_v}, step);
//
// adamw_step_with(...) is the same step around update and norm code of the caller's own
// (e.g. device kernels). Header-only. Built with OpenMP (-fopenmp), the host loops use up to
// `threads` threads; the values do not depend on it. They do depend on strict floating
// point: no -ffast-math, and no a*b + c fused into FMA (-ffp-contract=off where the target
// has FMA; msomni builds for the x86-64 baseline, which has none).
#pragma once

#include "model/model.hpp"
#include "model/parameter_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::model {

// Chunk of the gradient's sum of squares: partial sums per chunk, then the chunks in order.
inline constexpr int64_t adamw_norm_chunk = 4096;
// Below this much work (floats touched) the host loops stay on one thread.
inline constexpr int64_t adamw_parallel_work = int64_t{1} << 16;

// Sum of x[i]^2 in double, summed per adamw_norm_chunk floats and the partial sums in
// order: the same value on any number of threads.
inline double sum_of_squares(std::span<const float> x, int threads = 1) {
  const auto n = static_cast<int64_t>(x.size());
  const int64_t chunks = (n + adamw_norm_chunk - 1) / adamw_norm_chunk;
  std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
  const float* data = x.data();
  [[maybe_unused]] const int team = std::max(threads, 1);
#ifdef _OPENMP
#pragma omp parallel for num_threads(team) if(team > 1 && n >= adamw_parallel_work) schedule(static)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t end = std::min(n, (c + 1) * adamw_norm_chunk);
    double s = 0;
    for (int64_t i = c * adamw_norm_chunk; i < end; ++i) s += static_cast<double>(data[i]) * data[i];
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

// The factor that brings a gradient of global norm `norm` down to `max_norm`: 1 when it is
// already at most max_norm, or when max_norm <= 0 (clipping off).
inline float clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return 1.0f;
  // The epsilon keeps the clipped norm just under max_norm rather than exactly on it.
  return static_cast<float>(max_norm / (norm + 1e-6));
}

// One tensor's AdamW update, in the float values the element loop uses.
struct adamw_tensor_update {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // 0 for a tensor declared without weight decay
  float grad_scale = 1.0f;    // gradient_scale times the clip coefficient
  int64_t step = 1;           // 1-based step count after this update, for bias correction
};

// AdamW on n elements (decoupled weight decay, bias-corrected moments): m and v move toward
// the scaled gradient, then the parameter shrinks by its decay and takes the Adam step.
inline void adamw_update(const float* grad, int64_t n, const adamw_tensor_update& p, float* param, float* m, float* v,
                         int threads = 1) {
  const float bc1 = 1.0f - static_cast<float>(std::pow(static_cast<double>(p.beta1), p.step));
  const float bc2 = 1.0f - static_cast<float>(std::pow(static_cast<double>(p.beta2), p.step));
  const float beta1 = p.beta1, beta2 = p.beta2, lr = p.lr, wd = p.weight_decay, eps = p.eps;
  const float gscale = p.grad_scale;
  constexpr int64_t chunk = 4096;
  const int64_t chunks = (n + chunk - 1) / chunk;
  [[maybe_unused]] const int team = std::max(threads, 1);
#ifdef _OPENMP
#pragma omp parallel for num_threads(team) if(team > 1 && n * 4 >= adamw_parallel_work) schedule(static)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * chunk, hi = std::min(n, lo + chunk);
#ifdef _OPENMP
#pragma omp simd
#endif
    for (int64_t i = lo; i < hi; ++i) {
      const float g = grad[i] * gscale;
      m[i] = beta1 * m[i] + (1.0f - beta1) * g;
      v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
      const float m_hat = m[i] / bc1;
      const float v_hat = v[i] / bc2;
      param[i] -= lr * (wd * param[i] + m_hat / (std::sqrt(v_hat) + eps));
    }
  }
}

// One optimizer step around the caller's own element update: the global norm from
// `gradient_sum_squares` (the unscaled gradient's sum of squares) times gradient_scale; a
// non-finite norm skips the step (nothing changes, `step` included); else the clip
// coefficient, ++step, and update_tensor(info, adamw_tensor_update) once per tensor in
// layout order.
template <class UpdateTensor>
optimizer_report adamw_step_with(const parameter_layout& layout, const optimizer_settings& s,
                                 double gradient_sum_squares, int64_t& step, UpdateTensor&& update_tensor) {
  optimizer_report r;
  r.grad_norm = std::sqrt(gradient_sum_squares) * s.gradient_scale;
  if (!std::isfinite(r.grad_norm)) {
    // A NaN/Inf gradient would poison every weight and both moments; keep the old state
    // and let the caller decide (log, lower lr, roll back).
    r.skipped = true;
    r.step = step;
    return r;
  }
  r.clip_coefficient = clip_coefficient(r.grad_norm, s.grad_clip);
  ++step;
  r.step = step;
  for (const auto& p : layout.params) {
    adamw_tensor_update a;
    a.lr = static_cast<float>(s.lr);
    a.beta1 = static_cast<float>(s.beta1);
    a.beta2 = static_cast<float>(s.beta2);
    a.eps = static_cast<float>(s.eps);
    a.weight_decay = p.weight_decay ? static_cast<float>(s.weight_decay) : 0.0f;
    a.grad_scale = static_cast<float>(s.gradient_scale * r.clip_coefficient);
    a.step = step;
    update_tensor(p, a);
  }
  return r;
}

// The four flat host buffers of a layout: parameters, gradients and the AdamW moments.
struct adamw_buffers {
  std::span<float> parameters;
  std::span<const float> gradients;
  std::span<float> adam_m;
  std::span<float> adam_v;
};

// One optimizer step on host buffers (see adamw_step_with). Throws std::invalid_argument
// when a buffer's length is not layout.total.
inline optimizer_report adamw_step(const parameter_layout& layout, const optimizer_settings& s,
                                   const adamw_buffers& b, int64_t& step, int threads = 1) {
  const auto n = static_cast<size_t>(layout.total);
  if (b.parameters.size() != n || b.gradients.size() != n || b.adam_m.size() != n || b.adam_v.size() != n)
    throw std::invalid_argument("adamw_step: the buffers hold " + std::to_string(b.parameters.size()) + ", " +
                                std::to_string(b.gradients.size()) + ", " + std::to_string(b.adam_m.size()) + " and " +
                                std::to_string(b.adam_v.size()) + " floats; the layout has " + std::to_string(n));
  return adamw_step_with(layout, s, sum_of_squares(b.gradients, threads), step,
                         [&](const parameter_info& p, const adamw_tensor_update& a) {
                           adamw_update(b.gradients.data() + p.offset, p.size, a, b.parameters.data() + p.offset,
                                        b.adam_m.data() + p.offset, b.adam_v.data() + p.offset, threads);
                         });
}

}  // namespace msomni::model
