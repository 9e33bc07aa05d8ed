// CUDA backend: masked softmax cross-entropy, sum of squares and AdamW. Per-row losses and
// per-chunk partial sums come back to the host and are added there in order, the same way
// the CPU reference adds them.
#include "cuda/cuda_ops.hpp"

#include <cmath>
#include <vector>

namespace msomni::kernels {

using cuda_detail::block_max;
using cuda_detail::block_sum;
using cuda_detail::block_threads;
using cuda_detail::grid_for;

namespace {

__global__ void cross_entropy_kernel(const float* logits, const int32_t* targets,
                                     const float* mask, int64_t vocab, float grad_scale,
                                     float* d_logits, double* row_loss) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const float* z = logits + r * vocab;
  float* dz = d_logits + r * vocab;
  const float m = mask[r];
  if (m == 0) {
    for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) dz[c] = 0;
    if (threadIdx.x == 0) row_loss[r] = 0;
    return;
  }
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) mx = fmaxf(mx, z[c]);
  mx = block_max(mx, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) s += expf(z[c] - mx);
  const float log_sum = logf(block_sum(s, shared)) + mx;
  const int32_t target = targets[r];
  // Reads of z for the loss happen before this block's writes: every thread passed the
  // barriers inside block_sum, and each thread then touches only its own columns.
  if (threadIdx.x == 0) row_loss[r] = double(m) * double(log_sum - z[target]);
  __syncthreads();
  const float g = grad_scale * m;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x)
    dz[c] = g * expf(z[c] - log_sum) - (c == target ? g : 0.0f);
}

__global__ void sum_squares_kernel(const float* x, int64_t n, int64_t chunk, double* partial) {
  __shared__ double shared[32];
  const int64_t begin = blockIdx.x * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  double s = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) s += double(x[i]) * x[i];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void adamw_kernel(const float* grad, int64_t n, adamw_params p, float bc1, float bc2,
                             float* param, float* m, float* v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = grad[i] * p.grad_scale;
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * g;
    const float vi = p.beta2 * v[i] + (1.0f - p.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / bc1;
    const float v_hat = vi / bc2;
    param[i] -= p.lr * (p.weight_decay * param[i] + m_hat / (sqrtf(v_hat) + p.eps));
  }
}

}  // namespace

double cuda_ops::cross_entropy(const float* logits, const int32_t* targets, const float* mask,
                               int64_t rows, int64_t vocab, float grad_scale, float* d_logits) {
  if (rows == 0) return 0.0;
  double* row_loss = scratch_doubles(size_t(rows));
  cross_entropy_kernel<<<unsigned(rows), block_threads>>>(logits, targets, mask, vocab,
                                                          grad_scale, d_logits, row_loss);
  MSOMNI_CHECK_LAUNCH();
  std::vector<double> host(static_cast<size_t>(rows));
  download(host.data(), row_loss, host.size() * sizeof(double));
  double total = 0;
  for (double l : host) total += l;
  return total;
}

double cuda_ops::sum_squares(const float* x, int64_t n) {
  if (n == 0) return 0.0;
  const int64_t chunks = (n + sum_squares_chunk - 1) / sum_squares_chunk;
  double* partial = scratch_doubles(size_t(chunks));
  sum_squares_kernel<<<unsigned(chunks), block_threads>>>(x, n, sum_squares_chunk, partial);
  MSOMNI_CHECK_LAUNCH();
  std::vector<double> host(static_cast<size_t>(chunks));
  download(host.data(), partial, host.size() * sizeof(double));
  double total = 0;
  for (double s : host) total += s;
  return total;
}

void cuda_ops::adamw_update(const float* grad, int64_t n, const adamw_params& p, float* param,
                            float* m, float* v) {
  if (n == 0) return;
  // Bias corrections computed on the host exactly as the CPU backend does.
  const float bc1 = 1.0f - static_cast<float>(std::pow(static_cast<double>(p.beta1), p.step));
  const float bc2 = 1.0f - static_cast<float>(std::pow(static_cast<double>(p.beta2), p.step));
  adamw_kernel<<<grid_for(n), block_threads>>>(grad, n, p, bc1, bc2, param, m, v);
  MSOMNI_CHECK_LAUNCH();
}

}  // namespace msomni::kernels
