// The CUDA backend's class and the helpers its .cu files share (launch sizing, block
// reductions, the cuBLAS check macro). Compute runs on the legacy default stream, so
// kernels, cuBLAS calls and cudaMemcpy are ordered without explicit events; upload_async
// copies on a second (non-blocking) stream, after the compute issued before it (a kernel may
// still read the buffer being overwritten), and finish_uploads makes the default stream wait
// for those copies with an event.
#pragma once

#include "core/check.hpp"
#include "ops.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define MSOMNI_CHECK_CUBLAS(call)                                                        \
  do {                                                                                   \
    const cublasStatus_t msomni_rc_ = (call);                                            \
    if (msomni_rc_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::msomni::fail_call("cuBLAS", #call, static_cast<long>(msomni_rc_),                \
                          cublasGetStatusString(msomni_rc_), __FILE__, __LINE__);        \
  } while (0)

// A launch that failed to start (bad configuration, no device) surfaces here, at its call.
#define MSOMNI_CHECK_LAUNCH() MSOMNI_CHECK_CUDA(cudaGetLastError())

namespace msomni::kernels {

class cuda_ops final : public ops {
 public:
  cuda_ops(int device_index, std::shared_ptr<memory_account> account);
  ~cuda_ops() override;
  backend_kind kind() const override { return backend_kind::cuda; }
  std::string describe() const override { return description_; }

  void* allocate(size_t bytes) override;
  void release(void* p) noexcept override;
  void upload(void* dst, const void* src_host, size_t bytes) override;
  void download(void* dst_host, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  void synchronize() override;
  void upload_async(void* dst, const void* src_host, size_t bytes) override;
  void finish_uploads() override;

  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
            int64_t ldc) override;
  void bias_add(float* y, const float* bias, int64_t rows, int64_t cols) override;
  void column_sum_accumulate(const float* x, int64_t rows, int64_t cols, float* out) override;

  void token_embed_forward(const int32_t* tokens, const int32_t* offsets, const float* table,
                           int64_t batch, int64_t text_len, int64_t seq_len, int64_t dim,
                           float* x) override;
  void token_embed_backward(const int32_t* tokens, const int32_t* offsets, const float* d_x,
                            int64_t batch, int64_t text_len, int64_t seq_len, int64_t dim,
                            int64_t vocab, float* d_table) override;
  void position_embed_forward(const float* pos, int64_t batch, int64_t seq_len, int64_t dim,
                              float* x) override;
  void position_embed_backward(const float* d_x, int64_t batch, int64_t seq_len, int64_t dim,
                               float* d_pos) override;

  void layer_norm_forward(const float* x, const float* gamma, const float* beta, int64_t rows,
                          int64_t dim, float eps, float* y, float* mean, float* rstd) override;
  void layer_norm_backward(const float* d_y, const float* x, const float* gamma,
                           const float* mean, const float* rstd, int64_t rows, int64_t dim,
                           float* d_x, float* d_gamma, float* d_beta) override;

  void attention_forward(const float* qkv, int64_t batch, int64_t seq_len, int64_t heads,
                         int64_t head_dim, float* probs, float* out) override;
  void attention_backward(const float* d_out, const float* qkv, const float* probs,
                          int64_t batch, int64_t seq_len, int64_t heads, int64_t head_dim,
                          float* d_scores, float* d_qkv) override;

  void gelu_forward(const float* x, int64_t n, float* y) override;
  void gelu_backward(const float* x, const float* d_y, int64_t n, float* d_x) override;
  void add(const float* a, const float* b, int64_t n, float* out) override;
  void accumulate(const float* src, int64_t n, float* dst) override;
  void scale(float alpha, int64_t n, float* x) override;

  double cross_entropy(const float* logits, const int32_t* targets, const float* mask,
                       int64_t rows, int64_t vocab, float grad_scale, float* d_logits) override;
  double sum_squares(const float* x, int64_t n) override;
  void adamw_update(const float* grad, int64_t n, const adamw_params& p, float* param,
                    float* m, float* v) override;

 private:
  double* scratch_doubles(size_t count);  // grown on demand, reused across calls

  int device_ = 0;
  cublasHandle_t blas_ = nullptr;
  std::string description_;
  double* scratch_ = nullptr;
  size_t scratch_count_ = 0;
  cudaStream_t copy_stream_ = nullptr;  // upload_async's copies
  cudaEvent_t copies_done_ = nullptr;   // recorded on it by finish_uploads
  cudaEvent_t compute_mark_ = nullptr;  // the compute issued before a round of uploads
  bool uploads_pending_ = false;
};

namespace cuda_detail {

constexpr int block_threads = 256;

// Grid for a grid-stride loop over n elements; capped because the loop covers the rest.
inline unsigned grid_for(int64_t n, int block = block_threads) {
  int64_t g = (n + block - 1) / block;
  if (g < 1) g = 1;
  if (g > 65535) g = 65535;
  return static_cast<unsigned>(g);
}

// Sum over the block, returned to every thread. Fixed tree order: deterministic.
// `shared` needs 32 elements. Ends with a barrier so `shared` can be reused at once.
template <class T>
__device__ inline T block_sum(T v, T* shared) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  T total = 0;
  for (int w = 0; w < warps; ++w) total += shared[w];
  __syncthreads();
  return total;
}

__device__ inline float block_max(float v, float* shared) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  float total = -INFINITY;
  for (int w = 0; w < warps; ++w) total = fmaxf(total, shared[w]);
  __syncthreads();
  return total;
}

}  // namespace cuda_detail
}  // namespace msomni::kernels
