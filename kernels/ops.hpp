// The compute ops every model is built from, as one interface with two implementations:
// cpu/ (the always-built reference: OpenBLAS GEMMs, OpenMP loops) and cuda/ (cuBLAS GEMMs,
// our kernels; built when nvcc exists). Models are written once against `ops` and run on
// either; the parity tests hold the two implementations to each other.
//
// Conventions:
// - Pointers live in the backend's memory (host for cpu, device for cuda) unless the name
//   ends in `_host`. Layouts are row-major. A sequence batch is [batch, seq_len, dim].
// - Backward ops ACCUMULATE into parameter gradients (+=), so micro-batches can be summed
//   without extra buffers; activation gradients are overwritten unless documented otherwise.
// - Every op is deterministic for a given backend and thread count: each output element is
//   produced by one thread in a fixed order (no atomics), so identical inputs give
//   bit-identical outputs run after run.
// This header stays C++17 because nvcc compiles it with CMAKE_CUDA_STANDARD 17.
#pragma once

#include "memory/memory_account.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <string>
#include <utility>

namespace msomni::kernels {

enum class backend_kind { cpu, cuda };
const char* to_string(backend_kind kind);

// One AdamW update (decoupled weight decay, bias-corrected moments). `grad_scale` multiplies
// the gradient before use; global-norm clipping passes its coefficient here.
struct adamw_params {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float grad_scale = 1.0f;
  int64_t step = 1;  // 1-based step count after this update, for bias correction
};

class ops {
 public:
  virtual ~ops() = default;
  virtual backend_kind kind() const = 0;
  virtual std::string describe() const = 0;

  // --- memory (bytes) -------------------------------------------------------------------
  // Every allocation is counted in memory() before it is made (see memory_account.hpp): past
  // the account's budget it throws out_of_memory; so does a device that refuses one.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  memory_account& memory() const { return *memory_; }
  virtual void upload(void* dst, const void* src_host, size_t bytes) = 0;
  virtual void download(void* dst_host, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void zero(void* dst, size_t bytes) = 0;
  virtual void synchronize() = 0;
  // An upload that may still be running when it returns (CUDA: on the backend's copy stream,
  // asynchronous from pinned host memory, see make_batch_memory). `src_host` must stay valid
  // and unchanged until the next synchronisation of the compute work; pageable memory is
  // copied before the call returns. finish_uploads() orders every upload issued so far before
  // the compute work issued after it, without waiting on the host. The CPU backend copies at
  // once and has nothing to order.
  virtual void upload_async(void* dst, const void* src_host, size_t bytes) { upload(dst, src_host, bytes); }
  virtual void finish_uploads() {}

  // --- GEMM: C = alpha * op(A) * op(B) + beta * C, row-major, op(A) is m x k ------------
  virtual void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                    float* c, int64_t ldc) = 0;

  // --- linear layer y[rows, out] = x[rows, in] * w[in, out] + bias[out] -----------------
  // Built on gemm; bias may be null.
  void linear_forward(const float* x, const float* w, const float* bias, int64_t rows,
                      int64_t in, int64_t out, float* y);
  // d_x = d_y * w^T (overwritten, or added when accumulate_dx); d_w += x^T * d_y;
  // d_bias += column sums of d_y. d_x and d_bias may be null.
  void linear_backward(const float* d_y, const float* x, const float* w, int64_t rows,
                       int64_t in, int64_t out, float* d_x, float* d_w, float* d_bias,
                       bool accumulate_dx = false);
  virtual void bias_add(float* y, const float* bias, int64_t rows, int64_t cols) = 0;
  virtual void column_sum_accumulate(const float* x, int64_t rows, int64_t cols,
                                     float* out) = 0;

  // --- embeddings into a packed sequence ------------------------------------------------
  // Sample b's sequence is [counts[b] patch rows | text_len token rows | padding].
  // Patch embedding: x[b, p] = patches[b, p] * w + bias for p < counts_host[b].
  void patch_embed_forward(const float* patches, const float* w, const float* bias,
                           const int32_t* counts_host, int64_t batch, int64_t max_patches,
                           int64_t patch_dim, int64_t seq_len, int64_t dim, float* x);
  // d_w += patches^T * d_x and d_bias += sum of d_x over the patch rows of each sample.
  void patch_embed_backward(const float* patches, const float* d_x, const int32_t* counts_host,
                            int64_t batch, int64_t max_patches, int64_t patch_dim,
                            int64_t seq_len, int64_t dim, float* d_w, float* d_bias);
  // Token embedding: x[b, offsets[b] + t] = table[tokens[b, t]] for t < text_len.
  virtual void token_embed_forward(const int32_t* tokens, const int32_t* offsets,
                                   const float* table, int64_t batch, int64_t text_len,
                                   int64_t seq_len, int64_t dim, float* x) = 0;
  // d_table[v] += sum of d_x rows whose token is v.
  virtual void token_embed_backward(const int32_t* tokens, const int32_t* offsets,
                                    const float* d_x, int64_t batch, int64_t text_len,
                                    int64_t seq_len, int64_t dim, int64_t vocab,
                                    float* d_table) = 0;
  // x[b, s] += pos[s];  d_pos[s] += sum_b d_x[b, s].
  virtual void position_embed_forward(const float* pos, int64_t batch, int64_t seq_len,
                                      int64_t dim, float* x) = 0;
  virtual void position_embed_backward(const float* d_x, int64_t batch, int64_t seq_len,
                                       int64_t dim, float* d_pos) = 0;

  // --- layer norm over the last dimension -----------------------------------------------
  // Saves mean and 1/std per row for the backward pass.
  virtual void layer_norm_forward(const float* x, const float* gamma, const float* beta,
                                  int64_t rows, int64_t dim, float eps, float* y, float* mean,
                                  float* rstd) = 0;
  // d_x, d_gamma and d_beta all accumulate (d_x += ...), which is what a residual needs.
  virtual void layer_norm_backward(const float* d_y, const float* x, const float* gamma,
                                   const float* mean, const float* rstd, int64_t rows,
                                   int64_t dim, float* d_x, float* d_gamma,
                                   float* d_beta) = 0;

  // --- causal multi-head self-attention -------------------------------------------------
  // qkv [batch, seq, 3*heads*head_dim] holds q | k | v; probs [batch, heads, seq, seq]
  // receives the softmax (zero above the diagonal); out [batch, seq, heads*head_dim].
  virtual void attention_forward(const float* qkv, int64_t batch, int64_t seq_len,
                                 int64_t heads, int64_t head_dim, float* probs,
                                 float* out) = 0;
  // d_qkv is overwritten. d_scores [batch, heads, seq, seq] is scratch.
  virtual void attention_backward(const float* d_out, const float* qkv, const float* probs,
                                  int64_t batch, int64_t seq_len, int64_t heads,
                                  int64_t head_dim, float* d_scores, float* d_qkv) = 0;

  // --- GELU (tanh approximation), residual arithmetic -----------------------------------
  virtual void gelu_forward(const float* x, int64_t n, float* y) = 0;
  virtual void gelu_backward(const float* x, const float* d_y, int64_t n, float* d_x) = 0;
  virtual void add(const float* a, const float* b, int64_t n, float* out) = 0;
  virtual void accumulate(const float* src, int64_t n, float* dst) = 0;  // dst += src
  virtual void scale(float alpha, int64_t n, float* x) = 0;

  // --- softmax cross-entropy over masked rows -------------------------------------------
  // Returns the sum over rows with mask != 0 of -log softmax(logits)[target], and writes
  // d_logits = grad_scale * mask * (softmax - onehot). d_logits may alias logits.
  virtual double cross_entropy(const float* logits, const int32_t* targets, const float* mask,
                               int64_t rows, int64_t vocab, float grad_scale,
                               float* d_logits) = 0;

  // --- optimizer ------------------------------------------------------------------------
  // Sum of squares in double, summed in fixed-size chunks so the result does not depend on
  // the thread count.
  virtual double sum_squares(const float* x, int64_t n) = 0;
  virtual void adamw_update(const float* grad, int64_t n, const adamw_params& p, float* param,
                            float* m, float* v) = 0;

 protected:
  // Null: the process's account (process_memory_account()).
  explicit ops(std::shared_ptr<memory_account> account)
      : memory_(account ? std::move(account) : process_memory_account()) {}

 private:
  std::shared_ptr<memory_account> memory_;
};

// Chunk size of sum_squares partial sums; both backends sum the same partitions.
inline constexpr int64_t sum_squares_chunk = 4096;

// Global gradient-norm clipping: the factor that brings `norm` down to `max_norm` (1 when
// already below, or when max_norm <= 0 disables clipping).
float clip_coefficient(double norm, double max_norm);

// `threads` <= 0 means all hardware threads. Sets OpenBLAS's (process-wide) thread count.
// `account`: where its allocations are counted (null: the process's account).
std::unique_ptr<ops> make_cpu_ops(int threads, std::shared_ptr<memory_account> account = nullptr);
// Throws std::runtime_error saying why when built without CUDA or the device is unusable. The
// account's budget, when larger than the device's memory, is lowered to it.
std::unique_ptr<ops> make_cuda_ops(int device_index, std::shared_ptr<memory_account> account = nullptr);
bool cuda_compiled();

// Host memory for the micro-batches a rank feeds its model: the data pipeline's tensor stage
// packs into it, and the backend uploads from it. For CUDA it is page-locked (pinned) memory of
// the rank's device, so uploads run asynchronously at the bus's speed; for the CPU ordinary
// memory. Both are pools: a batch's blocks go back to the pool when it is dropped and the next
// batch of that size reuses them, so steady training allocates nothing (page-locking is slow).
// Thread-safe (the tensor stage allocates, the training thread frees). Throws
// std::runtime_error saying why when CUDA memory is asked for and no GPU backend exists.
std::shared_ptr<std::pmr::memory_resource> make_batch_memory(backend_kind kind, int device_index);

// An owning, typed allocation in one backend's memory.
template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(ops& backend, size_t count) : ops_(&backend), count_(count) {
    if (count > 0) ptr_ = static_cast<T*>(backend.allocate(count * sizeof(T)));
  }
  device_buffer(device_buffer&& o) noexcept { swap(o); }
  device_buffer& operator=(device_buffer&& o) noexcept {
    device_buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() {
    if (ptr_) ops_->release(ptr_);
  }
  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  void swap(device_buffer& o) noexcept {
    std::swap(ops_, o.ops_);
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
  }

 private:
  ops* ops_ = nullptr;
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

}  // namespace msomni::kernels
