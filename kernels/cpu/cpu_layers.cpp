// CPU reference backend: layer norm, causal attention, GELU and residual arithmetic.
#include "cpu/cpu_ops.hpp"

#include <cblas.h>
#include <omp.h>

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
    // Parameter gradients: each thread owns a contiguous range of columns and walks the
    // rows in order (row segments are contiguous), so every column's sums run over rows in
    // order on one thread.
    {
      const int t = omp_get_thread_num();
      const int nt = omp_get_num_threads();
      const int64_t c0 = dim * t / nt, c1 = dim * (t + 1) / nt;
      std::vector<float> g(static_cast<size_t>(c1 - c0), 0.0f), bsum(g.size(), 0.0f);
      float* gp = g.data();
      float* bp = bsum.data();
      for (int64_t r = 0; r < rows; ++r) {
        const float* dyr = d_y + r * dim + c0;
        const float* xr = x + r * dim + c0;
        const float mu = mean[r], rs = rstd[r];
#pragma omp simd
        for (int64_t d = 0; d < c1 - c0; ++d) {
          gp[d] += dyr[d] * (xr[d] - mu) * rs;
          bp[d] += dyr[d];
        }
      }
      for (int64_t d = c0; d < c1; ++d) {
        d_gamma[d] += gp[d - c0];
        d_beta[d] += bp[d - c0];
      }
    }
  }
}

namespace {

// Row-major single-precision GEMM on OpenBLAS: C = alpha * op(A) op(B) + beta * C.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha,
              a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
}

// Rows of the causal score matrix are processed in blocks of this many, so that a block
// only computes the columns left of its last row (about two thirds of the full square at
// S = 176 instead of all of it) while the GEMMs stay large enough to run at full speed.
constexpr int64_t attn_block = 64;

// Runs body(b, h) for every (sample, head). With several threads the pairs run in parallel
// on OpenMP and each GEMM inside runs single-threaded (OpenBLAS would otherwise start its
// own threads from every OpenMP thread); every pair writes disjoint outputs, and each GEMM
// has fixed sizes and a fixed thread count, so results do not depend on the schedule.
template <class Body>
void for_each_head(int threads, bool parallel, int64_t batch, int64_t heads, Body body) {
  if (threads > 1 && parallel) {
    openblas_set_num_threads(1);
#pragma omp parallel for collapse(2) num_threads(threads) schedule(static)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h) body(b, h);
    openblas_set_num_threads(threads);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h) body(b, h);
  }
}

}  // namespace

void cpu_ops::attention_forward(const float* qkv, int64_t batch, int64_t seq_len, int64_t heads,
                                int64_t head_dim, float* probs, float* out) {
  const int64_t model_dim = heads * head_dim;
  const int64_t row = 3 * model_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const bool parallel = parallel_worth(batch * heads * seq_len * seq_len * head_dim);
  for_each_head(threads_, parallel, batch, heads, [&](int64_t b, int64_t h) {
    const float* q = qkv + b * seq_len * row + h * head_dim;
    const float* k = q + model_dim;
    const float* v = q + 2 * model_dim;
    float* p_bh = probs + (b * heads + h) * seq_len * seq_len;
    float* o = out + b * seq_len * model_dim + h * head_dim;
    for (int64_t i0 = 0; i0 < seq_len; i0 += attn_block) {
      const int64_t i1 = std::min(seq_len, i0 + attn_block);
      float* p_blk = p_bh + i0 * seq_len;
      // scores[i0:i1, 0:i1] = scale * Q[i0:i1] K[0:i1]^T
      sgemm(false, true, i1 - i0, i1, head_dim, scale, q + i0 * row, row, k, row, 0.0f, p_blk,
            seq_len);
      for (int64_t i = i0; i < i1; ++i) {
        float* p = p_bh + i * seq_len;
        float mx = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) mx = std::max(mx, p[j]);
        float sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j <= i; ++j) p[j] *= inv;
        for (int64_t j = i + 1; j < seq_len; ++j) p[j] = 0;
      }
      // out[i0:i1] = P[i0:i1, 0:i1] V[0:i1]
      sgemm(false, false, i1 - i0, head_dim, i1, 1.0f, p_blk, seq_len, v, row, 0.0f,
            o + i0 * model_dim, model_dim);
    }
  });
}

void cpu_ops::attention_backward(const float* d_out, const float* qkv, const float* probs,
                                 int64_t batch, int64_t seq_len, int64_t heads,
                                 int64_t head_dim, float* d_scores, float* d_qkv) {
  const int64_t model_dim = heads * head_dim;
  const int64_t row = 3 * model_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const bool parallel = parallel_worth(batch * heads * seq_len * seq_len * head_dim);
  for_each_head(threads_, parallel, batch, heads, [&](int64_t b, int64_t h) {
    const float* q = qkv + b * seq_len * row + h * head_dim;
    const float* k = q + model_dim;
    const float* v = q + 2 * model_dim;
    float* dq = d_qkv + b * seq_len * row + h * head_dim;
    float* dk = dq + model_dim;
    float* dv = dq + 2 * model_dim;
    const float* dout = d_out + b * seq_len * model_dim + h * head_dim;
    const float* p_bh = probs + (b * heads + h) * seq_len * seq_len;
    float* ds_bh = d_scores + (b * heads + h) * seq_len * seq_len;
    for (int64_t i0 = 0; i0 < seq_len; i0 += attn_block) {
      const int64_t i1 = std::min(seq_len, i0 + attn_block);
      float* ds_blk = ds_bh + i0 * seq_len;
      // dP[i0:i1, 0:i1] = dO[i0:i1] V[0:i1]^T
      sgemm(false, true, i1 - i0, i1, head_dim, 1.0f, dout + i0 * model_dim, model_dim, v, row,
            0.0f, ds_blk, seq_len);
      for (int64_t i = i0; i < i1; ++i) {
        const float* p = p_bh + i * seq_len;
        float* ds = ds_bh + i * seq_len;
        float dot_pdp = 0;
        for (int64_t j = 0; j <= i; ++j) dot_pdp += p[j] * ds[j];
        for (int64_t j = 0; j <= i; ++j) ds[j] = p[j] * (ds[j] - dot_pdp);
        for (int64_t j = i + 1; j < seq_len; ++j) ds[j] = 0;
      }
      // dQ[i0:i1] = scale * dS[i0:i1, 0:i1] K[0:i1]
      sgemm(false, false, i1 - i0, head_dim, i1, scale, ds_blk, seq_len, k, row, 0.0f,
            dq + i0 * row, row);
    }
    // Column blocks: only rows i >= j0 of dS and P are non-zero in columns [j0, j1).
    for (int64_t j0 = 0; j0 < seq_len; j0 += attn_block) {
      const int64_t j1 = std::min(seq_len, j0 + attn_block);
      // dK[j0:j1] = scale * dS[j0:S, j0:j1]^T Q[j0:S]
      sgemm(true, false, j1 - j0, head_dim, seq_len - j0, scale, ds_bh + j0 * seq_len + j0,
            seq_len, q + j0 * row, row, 0.0f, dk + j0 * row, row);
      // dV[j0:j1] = P[j0:S, j0:j1]^T dO[j0:S]
      sgemm(true, false, j1 - j0, head_dim, seq_len - j0, 1.0f, p_bh + j0 * seq_len + j0,
            seq_len, dout + j0 * model_dim, model_dim, 0.0f, dv + j0 * row, row);
    }
  });
}

namespace {
constexpr float gelu_c = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float gelu_a = 0.044715f;

// tanh as a clamped rational function (the 13/6 approximation Eigen uses), within 4e-7 of
// the exact value over all floats. libm's tanhf is a scalar call that cost the GELU more
// than the MLP's GEMMs; this one is plain arithmetic the compiler vectorises. Same input,
// same bits, on every run.
inline float tanh_rational(float x) {
  const float c = 7.90531110763549805f;
  x = x > c ? c : x;  // written as selects so the loops calling this vectorise
  x = x < -c ? -c : x;
  const float x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * x;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p / q;
}
}  // namespace

// Element-wise loops run in fixed chunks: OpenMP splits the chunks over threads and each
// chunk's inner loop is a SIMD loop. Elements are independent (gelu_backward may run in
// place, d_x == d_y, which is safe element by element), so the split never changes a value.
constexpr int64_t ew_chunk = 4096;

void cpu_ops::gelu_forward(const float* x, int64_t n, float* y) {
  const int64_t chunks = (n + ew_chunk - 1) / ew_chunk;
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n * 8)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * ew_chunk, hi = std::min(n, lo + ew_chunk);
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      y[i] = 0.5f * v * (1.0f + tanh_rational(gelu_c * (v + gelu_a * v * v * v)));
    }
  }
}

void cpu_ops::gelu_backward(const float* x, const float* d_y, int64_t n, float* d_x) {
  const int64_t chunks = (n + ew_chunk - 1) / ew_chunk;
#pragma omp parallel for num_threads(threads_) if(parallel_worth(n * 8)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * ew_chunk, hi = std::min(n, lo + ew_chunk);
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      const float t = tanh_rational(gelu_c * (v + gelu_a * v * v * v));
      const float dt = (1.0f - t * t) * gelu_c * (1.0f + 3.0f * gelu_a * v * v);
      d_x[i] = d_y[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
    }
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
