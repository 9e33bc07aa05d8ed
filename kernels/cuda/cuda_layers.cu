// CUDA backend: layer norm, causal attention, GELU and residual arithmetic. Every reduction
// is a fixed block tree or a per-thread loop in a fixed order, never an atomic.
#include "cuda/cuda_ops.hpp"

namespace msomni::kernels {

using cuda_detail::block_max;
using cuda_detail::block_sum;
using cuda_detail::block_threads;
using cuda_detail::grid_for;

namespace {

constexpr int row_threads = 128;

__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta,
                                  int64_t dim, float eps, float* y, float* mean, float* rstd) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * dim;
  float s = 0;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) s += xr[d];
  const float mu = block_sum(s, shared) / float(dim);
  float ss = 0;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) ss += (xr[d] - mu) * (xr[d] - mu);
  const float rs = 1.0f / sqrtf(block_sum(ss, shared) / float(dim) + eps);
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x)
    y[r * dim + d] = (xr[d] - mu) * rs * gamma[d] + beta[d];
  if (threadIdx.x == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

__global__ void layer_norm_backward_rows(const float* d_y, const float* x, const float* gamma,
                                         const float* mean, const float* rstd, int64_t dim,
                                         float* d_x) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const float mu = mean[r], rs = rstd[r];
  float sg = 0, sgx = 0;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    const float g = d_y[r * dim + d] * gamma[d];
    sg += g;
    sgx += g * (x[r * dim + d] - mu) * rs;
  }
  sg = block_sum(sg, shared) / float(dim);
  sgx = block_sum(sgx, shared) / float(dim);
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    const float xhat = (x[r * dim + d] - mu) * rs;
    d_x[r * dim + d] += rs * (d_y[r * dim + d] * gamma[d] - sg - xhat * sgx);
  }
}

__global__ void layer_norm_backward_params(const float* d_y, const float* x, const float* mean,
                                           const float* rstd, int64_t rows, int64_t dim,
                                           float* d_gamma, float* d_beta) {
  const int64_t d = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (d >= dim) return;
  float g = 0, b = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float dy = d_y[r * dim + d];
    g += dy * (x[r * dim + d] - mean[r]) * rstd[r];
    b += dy;
  }
  d_gamma[d] += g;
  d_beta[d] += b;
}

// One block per (query row i, batch*head). Scores live in shared memory (seq_len floats).
__global__ void attention_forward_kernel(const float* qkv, int64_t seq_len, int64_t heads,
                                         int64_t head_dim, float* probs, float* out) {
  extern __shared__ float p[];
  __shared__ float shared[32];
  const int64_t i = blockIdx.x, bh = blockIdx.y, b = bh / heads, h = bh % heads;
  const int64_t model_dim = heads * head_dim, row = 3 * model_dim;
  const float scale = rsqrtf(float(head_dim));
  const float* base = qkv + b * seq_len * row;
  const float* q = base + i * row + h * head_dim;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) {
    const float* k = base + j * row + model_dim + h * head_dim;
    float dot = 0;
    for (int64_t d = 0; d < head_dim; ++d) dot += q[d] * k[d];
    p[j] = dot * scale;
    mx = fmaxf(mx, p[j]);
  }
  mx = block_max(mx, shared);
  float sum = 0;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) {
    p[j] = expf(p[j] - mx);
    sum += p[j];
  }
  const float inv = 1.0f / block_sum(sum, shared);
  float* prow = probs + (bh * seq_len + i) * seq_len;
  for (int64_t j = threadIdx.x; j < seq_len; j += blockDim.x) {
    const float v = j <= i ? p[j] * inv : 0.0f;
    if (j <= i) p[j] = v;
    prow[j] = v;
  }
  __syncthreads();
  float* o = out + (b * seq_len + i) * model_dim + h * head_dim;
  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0;
    for (int64_t j = 0; j <= i; ++j) acc += p[j] * base[j * row + 2 * model_dim + h * head_dim + d];
    o[d] = acc;
  }
}

// Per query row: d_scores = P * (dP - sum(P * dP)) and dQ.
__global__ void attention_backward_query(const float* d_out, const float* qkv,
                                         const float* probs, int64_t seq_len, int64_t heads,
                                         int64_t head_dim, float* d_scores, float* d_qkv) {
  extern __shared__ float ds[];
  __shared__ float shared[32];
  const int64_t i = blockIdx.x, bh = blockIdx.y, b = bh / heads, h = bh % heads;
  const int64_t model_dim = heads * head_dim, row = 3 * model_dim;
  const float scale = rsqrtf(float(head_dim));
  const float* base = qkv + b * seq_len * row;
  const float* prow = probs + (bh * seq_len + i) * seq_len;
  const float* dout = d_out + (b * seq_len + i) * model_dim + h * head_dim;
  float dot = 0;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) {
    const float* v = base + j * row + 2 * model_dim + h * head_dim;
    float dp = 0;
    for (int64_t d = 0; d < head_dim; ++d) dp += dout[d] * v[d];
    ds[j] = dp;
    dot += prow[j] * dp;
  }
  dot = block_sum(dot, shared);
  float* dsrow = d_scores + (bh * seq_len + i) * seq_len;
  for (int64_t j = threadIdx.x; j < seq_len; j += blockDim.x) {
    const float v = j <= i ? prow[j] * (ds[j] - dot) : 0.0f;
    if (j <= i) ds[j] = v;
    dsrow[j] = v;
  }
  __syncthreads();
  float* dq = d_qkv + (b * seq_len + i) * row + h * head_dim;
  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0;
    for (int64_t j = 0; j <= i; ++j) acc += ds[j] * base[j * row + model_dim + h * head_dim + d];
    dq[d] = scale * acc;
  }
}

// Per key row j: dK = scale * sum_i dS[i, j] q_i and dV = sum_i P[i, j] dO_i over i >= j.
__global__ void attention_backward_key(const float* d_out, const float* qkv, const float* probs,
                                       const float* d_scores, int64_t seq_len, int64_t heads,
                                       int64_t head_dim, float* d_qkv) {
  const int64_t j = blockIdx.x, bh = blockIdx.y, b = bh / heads, h = bh % heads;
  const int64_t model_dim = heads * head_dim, row = 3 * model_dim;
  const float scale = rsqrtf(float(head_dim));
  const float* base = qkv + b * seq_len * row;
  const float* p_bh = probs + bh * seq_len * seq_len;
  const float* ds_bh = d_scores + bh * seq_len * seq_len;
  float* dk = d_qkv + (b * seq_len + j) * row + model_dim + h * head_dim;
  float* dv = dk + model_dim;
  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc_k = 0, acc_v = 0;
    for (int64_t i = j; i < seq_len; ++i) {
      acc_k += ds_bh[i * seq_len + j] * base[i * row + h * head_dim + d];
      acc_v += p_bh[i * seq_len + j] * d_out[(b * seq_len + i) * model_dim + h * head_dim + d];
    }
    dk[d] = scale * acc_k;
    dv[d] = acc_v;
  }
}

constexpr float gelu_c = 0.7978845608028654f;
constexpr float gelu_a = 0.044715f;

__global__ void gelu_kernel(const float* x, int64_t n, float* y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(gelu_c * (v + gelu_a * v * v * v)));
  }
}

__global__ void gelu_backward_kernel(const float* x, const float* d_y, int64_t n, float* d_x) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float t = tanhf(gelu_c * (v + gelu_a * v * v * v));
    const float dt = (1.0f - t * t) * gelu_c * (1.0f + 3.0f * gelu_a * v * v);
    d_x[i] = d_y[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
  }
}

__global__ void add_kernel(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

__global__ void scale_kernel(float alpha, int64_t n, float* x) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= alpha;
}

}  // namespace

void cuda_ops::layer_norm_forward(const float* x, const float* gamma, const float* beta,
                                  int64_t rows, int64_t dim, float eps, float* y, float* mean,
                                  float* rstd) {
  if (rows == 0) return;
  layer_norm_kernel<<<unsigned(rows), row_threads>>>(x, gamma, beta, dim, eps, y, mean, rstd);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::layer_norm_backward(const float* d_y, const float* x, const float* gamma,
                                   const float* mean, const float* rstd, int64_t rows,
                                   int64_t dim, float* d_x, float* d_gamma, float* d_beta) {
  if (rows == 0) return;
  layer_norm_backward_rows<<<unsigned(rows), row_threads>>>(d_y, x, gamma, mean, rstd, dim, d_x);
  MSOMNI_CHECK_LAUNCH();
  layer_norm_backward_params<<<unsigned((dim + 127) / 128), 128>>>(d_y, x, mean, rstd, rows, dim,
                                                                   d_gamma, d_beta);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::attention_forward(const float* qkv, int64_t batch, int64_t seq_len,
                                 int64_t heads, int64_t head_dim, float* probs, float* out) {
  if (batch * seq_len == 0) return;
  const dim3 grid(unsigned(seq_len), unsigned(batch * heads));
  attention_forward_kernel<<<grid, row_threads, seq_len * sizeof(float)>>>(
      qkv, seq_len, heads, head_dim, probs, out);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::attention_backward(const float* d_out, const float* qkv, const float* probs,
                                  int64_t batch, int64_t seq_len, int64_t heads,
                                  int64_t head_dim, float* d_scores, float* d_qkv) {
  if (batch * seq_len == 0) return;
  const dim3 grid(unsigned(seq_len), unsigned(batch * heads));
  attention_backward_query<<<grid, row_threads, seq_len * sizeof(float)>>>(
      d_out, qkv, probs, seq_len, heads, head_dim, d_scores, d_qkv);
  MSOMNI_CHECK_LAUNCH();
  attention_backward_key<<<grid, 32>>>(d_out, qkv, probs, d_scores, seq_len, heads, head_dim,
                                       d_qkv);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::gelu_forward(const float* x, int64_t n, float* y) {
  if (n == 0) return;
  gelu_kernel<<<grid_for(n), block_threads>>>(x, n, y);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::gelu_backward(const float* x, const float* d_y, int64_t n, float* d_x) {
  if (n == 0) return;
  gelu_backward_kernel<<<grid_for(n), block_threads>>>(x, d_y, n, d_x);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::add(const float* a, const float* b, int64_t n, float* out) {
  if (n == 0) return;
  add_kernel<<<grid_for(n), block_threads>>>(a, b, n, out);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::accumulate(const float* src, int64_t n, float* dst) { add(dst, src, n, dst); }

void cuda_ops::scale(float alpha, int64_t n, float* x) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n), block_threads>>>(alpha, n, x);
  MSOMNI_CHECK_LAUNCH();
}

}  // namespace msomni::kernels
