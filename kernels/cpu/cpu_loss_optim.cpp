// CPU reference backend: masked softmax cross-entropy, sum of squares and AdamW.
#include "cpu/cpu_ops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace msomni::kernels {

double cpu_ops::cross_entropy(const float* logits, const int32_t* targets, const float* mask,
                              int64_t rows, int64_t vocab, float grad_scale, float* d_logits) {
  for (int64_t r = 0; r < rows; ++r)
    if (mask[r] != 0 && (targets[r] < 0 || targets[r] >= vocab))
      throw std::invalid_argument("cross_entropy: row " + std::to_string(r) + " has target " +
                                  std::to_string(targets[r]) + " outside the vocabulary [0, " +
                                  std::to_string(vocab) + ")");
  std::vector<double> row_loss(static_cast<size_t>(rows), 0.0);
#pragma omp parallel for num_threads(threads_) if(parallel_worth(rows * vocab)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * vocab;
    float* dz = d_logits + r * vocab;
    const float m = mask[r];
    if (m == 0) {
      for (int64_t c = 0; c < vocab; ++c) dz[c] = 0;
      continue;
    }
    float mx = -INFINITY;
    for (int64_t c = 0; c < vocab; ++c) mx = std::max(mx, z[c]);
    float sum = 0;
    for (int64_t c = 0; c < vocab; ++c) sum += std::exp(z[c] - mx);
    const float log_sum = std::log(sum) + mx;
    const float target_logit = z[targets[r]];
    row_loss[static_cast<size_t>(r)] = static_cast<double>(m) * (log_sum - target_logit);
    // z may alias dz: every read of this row happened above.
    const float g = grad_scale * m;
    for (int64_t c = 0; c < vocab; ++c) dz[c] = g * std::exp(z[c] - log_sum);
    dz[targets[r]] -= g;
  }
  double total = 0;  // summed in row order on one thread: deterministic
  for (double l : row_loss) total += l;
  return total;
}

double cpu_ops::sum_squares(const float* x, int64_t n) {
  const int64_t chunks = (n + sum_squares_chunk - 1) / sum_squares_chunk;
  std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t end = std::min(n, (c + 1) * sum_squares_chunk);
    double s = 0;
    for (int64_t i = c * sum_squares_chunk; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

void cpu_ops::adamw_update(const float* grad, int64_t n, const adamw_params& p, float* param,
                           float* m, float* v) {
  const float bc1 = 1.0f - static_cast<float>(std::pow(static_cast<double>(p.beta1), p.step));
  const float bc2 = 1.0f - static_cast<float>(std::pow(static_cast<double>(p.beta2), p.step));
  // The parameters go into locals so the compiler knows the stores below cannot change
  // them; fixed chunks over threads, a SIMD loop inside each (elements are independent).
  const float beta1 = p.beta1, beta2 = p.beta2, lr = p.lr, wd = p.weight_decay, eps = p.eps;
  const float gscale = p.grad_scale;
  constexpr int64_t chunk = 4096;
  const int64_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n * 4)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * chunk, hi = std::min(n, lo + chunk);
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float g = grad[i] * gscale;
      m[i] = beta1 * m[i] + (1.0f - beta1) * g;
      v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
      const float m_hat = m[i] / bc1;
      const float v_hat = v[i] / bc2;
      // Decoupled decay (Loshchilov & Hutter): shrink the weight, then take the Adam step.
      param[i] -= lr * (wd * param[i] + m_hat / (std::sqrt(v_hat) + eps));
    }
  }
}

}  // namespace msomni::kernels
