// CUDA backend: device setup, memory, cuBLAS GEMM (row-major through the transpose
// identity), bias/column sums and embeddings.
#include "cuda/cuda_ops.hpp"

#include <stdexcept>
#include <string>

namespace msomni::kernels {

using cuda_detail::block_threads;
using cuda_detail::grid_for;

cuda_ops::cuda_ops(int device_index, std::shared_ptr<memory_account> account)
    : ops(std::move(account)), device_(device_index) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string("make_cuda_ops: no usable GPU: ") +
                             cudaGetErrorString(rc));
  if (device_index < 0 || device_index >= count)
    throw std::runtime_error("make_cuda_ops: device " + std::to_string(device_index) +
                             " requested but " + std::to_string(count) + " present");
  MSOMNI_CHECK_CUDA(cudaSetDevice(device_));
  MSOMNI_CHECK_CUBLAS(cublasCreate(&blas_));
  // Plain FP32 (no TF32) so results stay comparable with the CPU reference.
  MSOMNI_CHECK_CUBLAS(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
  cudaDeviceProp prop{};
  MSOMNI_CHECK_CUDA(cudaGetDeviceProperties(&prop, device_));
  MSOMNI_CHECK_CUDA(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  MSOMNI_CHECK_CUDA(cudaEventCreateWithFlags(&copies_done_, cudaEventDisableTiming));
  MSOMNI_CHECK_CUDA(cudaEventCreateWithFlags(&compute_mark_, cudaEventDisableTiming));
  description_ = "cuda device " + std::to_string(device_) + " (" + prop.name + ", sm_" +
                 std::to_string(prop.major) + std::to_string(prop.minor) + ")";
  // The budget is the smaller of the configured one and the device.
  size_t free_bytes = 0, total_bytes = 0;
  MSOMNI_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (memory().budget() == 0 || memory().budget() > total_bytes) memory().set_budget(total_bytes);
}

cuda_ops::~cuda_ops() {
  if (scratch_) release(scratch_);
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  if (copies_done_) cudaEventDestroy(copies_done_);
  if (compute_mark_) cudaEventDestroy(compute_mark_);
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
  if (blas_) cublasDestroy(blas_);
}

void* cuda_ops::allocate(size_t bytes) {
  const size_t size = bytes == 0 ? 1 : bytes;
  const std::string backend = "cuda device " + std::to_string(device_);
  memory().charge(size, backend);
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, size);
  if (rc == cudaSuccess) {
    memory().opened(p, size);
    return p;
  }
  memory().refund(size);
  (void)cudaGetLastError();  // cudaMalloc leaves its error as the last one: a later launch check would report it
  if (rc != cudaErrorMemoryAllocation) MSOMNI_CHECK_CUDA(rc);
  // The device refused: the same error as the budget's, with what the device says it has.
  size_t free_bytes = 0, total_bytes = 0;
  const bool info = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  throw memory().error(backend, size, std::string("refused by cudaMalloc (") + cudaGetErrorString(rc) + ")",
                       info ? "cudaMemGetInfo: " + std::to_string(free_bytes) + " bytes free of " +
                                  std::to_string(total_bytes)
                            : std::string("cudaMemGetInfo failed"));
}

void cuda_ops::release(void* p) noexcept {
  memory().closed(p);
  cudaFree(p);
}

void cuda_ops::upload(void* dst, const void* src, size_t bytes) {
  MSOMNI_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void cuda_ops::upload_async(void* dst, const void* src, size_t bytes) {
  if (!uploads_pending_) {  // the first of a round: after every kernel issued so far
    MSOMNI_CHECK_CUDA(cudaEventRecord(compute_mark_, cudaStreamLegacy));
    MSOMNI_CHECK_CUDA(cudaStreamWaitEvent(copy_stream_, compute_mark_, 0));
  }
  MSOMNI_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_stream_));
  uploads_pending_ = true;
}
void cuda_ops::finish_uploads() {
  if (!uploads_pending_) return;
  MSOMNI_CHECK_CUDA(cudaEventRecord(copies_done_, copy_stream_));
  MSOMNI_CHECK_CUDA(cudaStreamWaitEvent(cudaStreamLegacy, copies_done_, 0));
  uploads_pending_ = false;
}
void cuda_ops::download(void* dst, const void* src, size_t bytes) {
  MSOMNI_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void cuda_ops::copy(void* dst, const void* src, size_t bytes) {
  MSOMNI_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}
void cuda_ops::zero(void* dst, size_t bytes) { MSOMNI_CHECK_CUDA(cudaMemset(dst, 0, bytes)); }
void cuda_ops::synchronize() { MSOMNI_CHECK_CUDA(cudaDeviceSynchronize()); }

double* cuda_ops::scratch_doubles(size_t count) {
  if (count > scratch_count_) {
    if (scratch_) release(scratch_);
    scratch_ = nullptr;
    scratch_count_ = 0;
    scratch_ = static_cast<double*>(allocate(count * sizeof(double)));
    scratch_count_ = count;
  }
  return scratch_;
}

void cuda_ops::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                    float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  MSOMNI_CHECK_CUBLAS(cublasSgemm(blas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
                                  static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                  static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c,
                                  static_cast<int>(ldc)));
}

namespace {

__global__ void bias_add_kernel(float* y, const float* bias, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % cols];
}

// One thread per column, rows in order: deterministic and matches the CPU summation order.
__global__ void column_sum_kernel(const float* x, int64_t rows, int64_t cols, float* out) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  float s = 0;
  for (int64_t r = 0; r < rows; ++r) s += x[r * cols + c];
  out[c] += s;
}

__global__ void token_embed_kernel(const int32_t* tokens, const int32_t* offsets,
                                   const float* table, int64_t batch, int64_t text_len,
                                   int64_t seq_len, int64_t dim, float* x) {
  const int64_t n = batch * text_len * dim;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t d = i % dim, bt = i / dim, t = bt % text_len, b = bt / text_len;
    x[(b * seq_len + offsets[b] + t) * dim + d] = table[int64_t(tokens[bt]) * dim + d];
  }
}

// One thread per (vocab row, column) scanning all positions: no atomics, fixed order.
__global__ void token_embed_backward_kernel(const int32_t* tokens, const int32_t* offsets,
                                            const float* d_x, int64_t batch, int64_t text_len,
                                            int64_t seq_len, int64_t dim, int64_t vocab,
                                            float* d_table) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= vocab * dim) return;
  const int64_t v = i / dim, d = i % dim;
  float s = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < text_len; ++t)
      if (tokens[b * text_len + t] == v) s += d_x[(b * seq_len + offsets[b] + t) * dim + d];
  d_table[i] += s;
}

__global__ void position_embed_kernel(const float* pos, int64_t batch, int64_t seq_len,
                                      int64_t dim, float* x) {
  const int64_t n = batch * seq_len * dim, per = seq_len * dim;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] += pos[i % per];
}

__global__ void position_embed_backward_kernel(const float* d_x, int64_t batch,
                                               int64_t seq_len, int64_t dim, float* d_pos) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t per = seq_len * dim;
  if (i >= per) return;
  float s = 0;
  for (int64_t b = 0; b < batch; ++b) s += d_x[b * per + i];
  d_pos[i] += s;
}

}  // namespace

void cuda_ops::bias_add(float* y, const float* bias, int64_t rows, int64_t cols) {
  if (rows * cols == 0) return;
  bias_add_kernel<<<grid_for(rows * cols), block_threads>>>(y, bias, rows, cols);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::column_sum_accumulate(const float* x, int64_t rows, int64_t cols, float* out) {
  if (cols == 0) return;
  column_sum_kernel<<<unsigned((cols + 127) / 128), 128>>>(x, rows, cols, out);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::token_embed_forward(const int32_t* tokens, const int32_t* offsets,
                                   const float* table, int64_t batch, int64_t text_len,
                                   int64_t seq_len, int64_t dim, float* x) {
  const int64_t n = batch * text_len * dim;
  if (n == 0) return;
  token_embed_kernel<<<grid_for(n), block_threads>>>(tokens, offsets, table, batch, text_len,
                                                      seq_len, dim, x);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::token_embed_backward(const int32_t* tokens, const int32_t* offsets,
                                    const float* d_x, int64_t batch, int64_t text_len,
                                    int64_t seq_len, int64_t dim, int64_t vocab,
                                    float* d_table) {
  const int64_t n = vocab * dim;
  if (n == 0) return;
  token_embed_backward_kernel<<<unsigned((n + 127) / 128), 128>>>(
      tokens, offsets, d_x, batch, text_len, seq_len, dim, vocab, d_table);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::position_embed_forward(const float* pos, int64_t batch, int64_t seq_len,
                                      int64_t dim, float* x) {
  const int64_t n = batch * seq_len * dim;
  if (n == 0) return;
  position_embed_kernel<<<grid_for(n), block_threads>>>(pos, batch, seq_len, dim, x);
  MSOMNI_CHECK_LAUNCH();
}

void cuda_ops::position_embed_backward(const float* d_x, int64_t batch, int64_t seq_len,
                                       int64_t dim, float* d_pos) {
  const int64_t n = seq_len * dim;
  if (n == 0) return;
  position_embed_backward_kernel<<<unsigned((n + 127) / 128), 128>>>(d_x, batch, seq_len, dim,
                                                                      d_pos);
  MSOMNI_CHECK_LAUNCH();
}

std::unique_ptr<ops> make_cuda_ops(int device_index, std::shared_ptr<memory_account> account) {
  return std::make_unique<cuda_ops>(device_index, std::move(account));
}

bool cuda_compiled() { return true; }

}  // namespace msomni::kernels
