// CPU reference backend: layer norm, causal attention, GELU and residual arithmetic.
#include "cpu/cpu_ops.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace msomni::kernels {

void cpu_ops::layer_norm_forward(const float* x, const float* gamma, const float* beta,
                                 int64_t rows, int64_t dim, float eps, float* y, float* mean,
                                 float* rstd) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(rows * dim)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float s = 0;
    for (int64_t d = 0; d < dim; ++d) s += xr[d];
    const float mu = s / static_cast<float>(dim);
    float ss = 0;  // two passes: the one-pass formula cancels badly for large means
    for (int64_t d = 0; d < dim; ++d) ss += (xr[d] - mu) * (xr[d] - mu);
    const float rs = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    for (int64_t d = 0; d < dim; ++d) y[r * dim + d] = (xr[d] - mu) * rs * gamma[d] + beta[d];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void cpu_ops::layer_norm_backward(const float* d_y, const float* x, const float* gamma,
                                  const float* mean, const float* rstd, int64_t rows,
                                  int64_t dim, float* d_x, float* d_gamma, float* d_beta) {
#pragma omp parallel num_threads(threads_) if(parallel_worth(rows * dim))
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * dim;
      const float* dyr = d_y + r * dim;
      float sum_g = 0, sum_gx = 0;
      for (int64_t d = 0; d < dim; ++d) {
        const float xhat = (xr[d] - mean[r]) * rstd[r];
        sum_g += dyr[d] * gamma[d];
        sum_gx += dyr[d] * gamma[d] * xhat;
      }
      const float inv_dim = 1.0f / static_cast<float>(dim);
      for (int64_t d = 0; d < dim; ++d) {
        const float xhat = (xr[d] - mean[r]) * rstd[r];
        d_x[r * dim + d] +=
            rstd[r] * (dyr[d] * gamma[d] - sum_g * inv_dim - xhat * sum_gx * inv_dim);
      }
    }
    // Parameter gradients: one thread per column, rows in order.
#pragma omp for schedule(static)
    for (int64_t d = 0; d < dim; ++d) {
      float g = 0, b = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const float dy = d_y[r * dim + d];
        g += dy * (x[r * dim + d] - mean[r]) * rstd[r];
        b += dy;
      }
      d_gamma[d] += g;
      d_beta[d] += b;
    }
  }
}

void cpu_ops::attention_forward(const float* qkv, int64_t batch, int64_t seq_len, int64_t heads,
                                int64_t head_dim, float* probs, float* out) {
  const int64_t model_dim = heads * head_dim;
  const int64_t row = 3 * model_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
#pragma omp parallel for collapse(2) num_threads(threads_) if(parallel_worth(batch * heads * seq_len * seq_len * head_dim)) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const float* base = qkv + b * seq_len * row;
      float* p_bh = probs + (b * heads + h) * seq_len * seq_len;
      for (int64_t i = 0; i < seq_len; ++i) {
        const float* q = base + i * row + h * head_dim;
        float* p = p_bh + i * seq_len;
        float mx = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          const float* k = base + j * row + model_dim + h * head_dim;
          float dot = 0;
          for (int64_t d = 0; d < head_dim; ++d) dot += q[d] * k[d];
          p[j] = dot * scale;
          mx = std::max(mx, p[j]);
        }
        float sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j <= i; ++j) p[j] *= inv;
        for (int64_t j = i + 1; j < seq_len; ++j) p[j] = 0;
        float* o = out + (b * seq_len + i) * model_dim + h * head_dim;
        for (int64_t d = 0; d < head_dim; ++d) o[d] = 0;
        for (int64_t j = 0; j <= i; ++j) {
          const float* v = base + j * row + 2 * model_dim + h * head_dim;
          for (int64_t d = 0; d < head_dim; ++d) o[d] += p[j] * v[d];
        }
      }
    }
}

void cpu_ops::attention_backward(const float* d_out, const float* qkv, const float* probs,
                                 int64_t batch, int64_t seq_len, int64_t heads,
                                 int64_t head_dim, float* d_scores, float* d_qkv) {
  const int64_t model_dim = heads * head_dim;
  const int64_t row = 3 * model_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  // Each (b, h) owns its head's columns of d_qkv, so the pairs run in parallel while the
  // rows inside one pair accumulate in a fixed order.
#pragma omp parallel for collapse(2) num_threads(threads_) if(parallel_worth(batch * heads * seq_len * seq_len * head_dim)) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const float* base = qkv + b * seq_len * row;
      float* d_base = d_qkv + b * seq_len * row;
      const float* p_bh = probs + (b * heads + h) * seq_len * seq_len;
      float* ds_bh = d_scores + (b * heads + h) * seq_len * seq_len;
      for (int64_t i = 0; i < seq_len; ++i)
        for (int64_t part = 0; part < 3; ++part)
          for (int64_t d = 0; d < head_dim; ++d)
            d_base[i * row + part * model_dim + h * head_dim + d] = 0;
      for (int64_t i = 0; i < seq_len; ++i) {
        const float* p = p_bh + i * seq_len;
        float* ds = ds_bh + i * seq_len;
        const float* dout = d_out + (b * seq_len + i) * model_dim + h * head_dim;
        float dot_pdp = 0;
        for (int64_t j = 0; j <= i; ++j) {
          const float* v = base + j * row + 2 * model_dim + h * head_dim;
          float dp = 0;
          for (int64_t d = 0; d < head_dim; ++d) dp += dout[d] * v[d];
          ds[j] = dp;
          dot_pdp += p[j] * dp;
        }
        const float* q = base + i * row + h * head_dim;
        float* dq = d_base + i * row + h * head_dim;
        for (int64_t j = 0; j <= i; ++j) {
          ds[j] = p[j] * (ds[j] - dot_pdp);
          const float* k = base + j * row + model_dim + h * head_dim;
          float* dk = d_base + j * row + model_dim + h * head_dim;
          float* dv = d_base + j * row + 2 * model_dim + h * head_dim;
          for (int64_t d = 0; d < head_dim; ++d) {
            dq[d] += scale * ds[j] * k[d];
            dk[d] += scale * ds[j] * q[d];
            dv[d] += p[j] * dout[d];
          }
        }
      }
    }
}

namespace {
constexpr float gelu_c = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float gelu_a = 0.044715f;
}  // namespace

void cpu_ops::gelu_forward(const float* x, int64_t n, float* y) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n * 8)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(gelu_c * (v + gelu_a * v * v * v)));
  }
}

void cpu_ops::gelu_backward(const float* x, const float* d_y, int64_t n, float* d_x) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n * 8)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = std::tanh(gelu_c * (v + gelu_a * v * v * v));
    const float dt = (1.0f - t * t) * gelu_c * (1.0f + 3.0f * gelu_a * v * v);
    d_x[i] = d_y[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
  }
}

void cpu_ops::add(const float* a, const float* b, int64_t n, float* out) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n)) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void cpu_ops::accumulate(const float* src, int64_t n, float* dst) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n)) schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

void cpu_ops::scale(float alpha, int64_t n, float* x) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n)) schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

}  // namespace msomni::kernels
