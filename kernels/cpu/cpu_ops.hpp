// The CPU reference backend's class, shared by the files that implement its ops.
#pragma once

#include "ops.hpp"

namespace msomni::kernels {

class cpu_ops final : public ops {
 public:
  cpu_ops(int threads, std::shared_ptr<memory_account> account);
  backend_kind kind() const override { return backend_kind::cpu; }
  std::string describe() const override;
  int threads() const { return threads_; }

  void* allocate(size_t bytes) override;
  void release(void* p) noexcept override;
  void upload(void* dst, const void* src_host, size_t bytes) override;
  void download(void* dst_host, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  void synchronize() override {}

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
  // Below this much work a parallel region costs more than it saves, and on a loaded
  // machine its barrier can stall for a whole scheduler slice. Each output element is
  // computed the same way either way, so the choice never changes results.
  bool parallel_worth(int64_t work) const { return threads_ > 1 && work >= (int64_t{1} << 16); }

  int threads_;
};

}  // namespace msomni::kernels
