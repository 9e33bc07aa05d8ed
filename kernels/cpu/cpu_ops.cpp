// CPU reference backend: memory, GEMM through OpenBLAS, bias/column sums and embeddings.
// OpenMP loops are split so that every output element is written by exactly one thread,
// which keeps results independent of scheduling.
#include "cpu/cpu_ops.hpp"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

namespace msomni::kernels {

cpu_ops::cpu_ops(int threads, std::shared_ptr<memory_account> account) : ops(std::move(account)) {
  threads_ = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (threads_ <= 0) threads_ = 1;
  openblas_set_num_threads(threads_);
}

std::string cpu_ops::describe() const {
  return "cpu (OpenBLAS + OpenMP, " + std::to_string(threads_) + " threads)";
}

void* cpu_ops::allocate(size_t bytes) {
  // 64-byte alignment suits AVX-512 loads; aligned_alloc needs a multiple of the alignment.
  // The account counts the rounded size: what the process holds.
  const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  memory().charge(rounded, "cpu");
  void* p = std::aligned_alloc(64, rounded);
  if (!p) {
    memory().refund(rounded);
    throw memory().error("cpu", rounded, "failed: the C library's aligned_alloc returned null");
  }
  memory().opened(p, rounded);
  return p;
}

void cpu_ops::release(void* p) noexcept {
  memory().closed(p);
  std::free(p);
}
void cpu_ops::upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void cpu_ops::download(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void cpu_ops::copy(void* dst, const void* src, size_t bytes) { std::memmove(dst, src, bytes); }
void cpu_ops::zero(void* dst, size_t bytes) { std::memset(dst, 0, bytes); }

void cpu_ops::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                   float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
}

void cpu_ops::bias_add(float* y, const float* bias, int64_t rows, int64_t cols) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(rows * cols)) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] += bias[c];
}

void cpu_ops::column_sum_accumulate(const float* x, int64_t rows, int64_t cols, float* out) {
  // Each thread owns a contiguous range of columns and walks the rows in order, adding a
  // whole row segment at a time (contiguous, vectorisable) into its partial sums: every
  // column's sum still runs over rows in order on one thread.
  const int nt = parallel_worth(rows * cols) ? threads_ : 1;
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    const int n = omp_get_num_threads();
    const int64_t c0 = cols * t / n;
    const int64_t c1 = cols * (t + 1) / n;
    std::vector<float> s(static_cast<size_t>(c1 - c0), 0.0f);
    float* sp = s.data();
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols + c0;
#pragma omp simd
      for (int64_t c = 0; c < c1 - c0; ++c) sp[c] += xr[c];
    }
    for (int64_t c = c0; c < c1; ++c) out[c] += sp[c - c0];
  }
}

void cpu_ops::token_embed_forward(const int32_t* tokens, const int32_t* offsets,
                                  const float* table, int64_t batch, int64_t text_len,
                                  int64_t seq_len, int64_t dim, float* x) {
#pragma omp parallel for collapse(2) num_threads(threads_) if(parallel_worth(batch * text_len * dim)) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < text_len; ++t) {
      const float* src = table + static_cast<int64_t>(tokens[b * text_len + t]) * dim;
      float* dst = x + (b * seq_len + offsets[b] + t) * dim;
      std::memcpy(dst, src, sizeof(float) * dim);
    }
}

void cpu_ops::token_embed_backward(const int32_t* tokens, const int32_t* offsets,
                                   const float* d_x, int64_t batch, int64_t text_len,
                                   int64_t seq_len, int64_t dim, int64_t vocab,
                                   float* d_table) {
  // Each thread owns a range of vocabulary rows and scans every position in order: no two
  // threads write the same row, and each row's sum has a fixed order.
#pragma omp parallel for num_threads(threads_) if(parallel_worth(vocab * batch * text_len)) schedule(static)
  for (int64_t v = 0; v < vocab; ++v) {
    float* row = d_table + v * dim;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < text_len; ++t) {
        if (tokens[b * text_len + t] != v) continue;
        const float* src = d_x + (b * seq_len + offsets[b] + t) * dim;
        for (int64_t d = 0; d < dim; ++d) row[d] += src[d];
      }
  }
}

void cpu_ops::position_embed_forward(const float* pos, int64_t batch, int64_t seq_len,
                                     int64_t dim, float* x) {
#pragma omp parallel for collapse(2) num_threads(threads_) if(parallel_worth(batch * seq_len * dim)) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq_len; ++s)
      for (int64_t d = 0; d < dim; ++d) x[(b * seq_len + s) * dim + d] += pos[s * dim + d];
}

void cpu_ops::position_embed_backward(const float* d_x, int64_t batch, int64_t seq_len,
                                      int64_t dim, float* d_pos) {
#pragma omp parallel for num_threads(threads_) if(parallel_worth(batch * seq_len * dim)) schedule(static)
  for (int64_t s = 0; s < seq_len; ++s)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t d = 0; d < dim; ++d) d_pos[s * dim + d] += d_x[(b * seq_len + s) * dim + d];
}

std::unique_ptr<ops> make_cpu_ops(int threads, std::shared_ptr<memory_account> account) {
  return std::make_unique<cpu_ops>(threads, std::move(account));
}

}  // namespace msomni::kernels
