// The backend-independent parts of `ops`: linear layers and patch embedding composed from
// gemm/bias kernels, clipping arithmetic, names.
#include "ops.hpp"

#include <cmath>
#include <stdexcept>

namespace msomni::kernels {

const char* to_string(backend_kind kind) {
  switch (kind) {
    case backend_kind::cpu: return "cpu";
    case backend_kind::cuda: return "cuda";
  }
  return "?";
}

float clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return 1.0f;
  // The epsilon keeps the clipped norm just under max_norm rather than exactly on it.
  return static_cast<float>(max_norm / (norm + 1e-6));
}

void ops::linear_forward(const float* x, const float* w, const float* bias, int64_t rows,
                         int64_t in, int64_t out, float* y) {
  gemm(false, false, rows, out, in, 1.0f, x, in, w, out, 0.0f, y, out);
  if (bias) bias_add(y, bias, rows, out);
}

void ops::linear_backward(const float* d_y, const float* x, const float* w, int64_t rows,
                          int64_t in, int64_t out, float* d_x, float* d_w, float* d_bias,
                          bool accumulate_dx) {
  if (d_x) gemm(false, true, rows, in, out, 1.0f, d_y, out, w, out, accumulate_dx ? 1.0f : 0.0f,
                d_x, in);
  if (d_w) gemm(true, false, in, out, rows, 1.0f, x, in, d_y, out, 1.0f, d_w, out);
  if (d_bias) column_sum_accumulate(d_y, rows, out, d_bias);
}

void ops::patch_embed_forward(const float* patches, const float* w, const float* bias,
                              const int32_t* counts_host, int64_t batch, int64_t max_patches,
                              int64_t patch_dim, int64_t seq_len, int64_t dim, float* x) {
  // One GEMM per sample because each sample has its own patch count; batches are small.
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t count = counts_host[b];
    if (count < 0 || count > max_patches || count > seq_len)
      throw std::invalid_argument("patch_embed_forward: sample " + std::to_string(b) +
                                  " has patch count " + std::to_string(count) +
                                  " outside [0, " + std::to_string(max_patches) + "]");
    if (count == 0) continue;
    float* rows = x + b * seq_len * dim;
    gemm(false, false, count, dim, patch_dim, 1.0f, patches + b * max_patches * patch_dim,
         patch_dim, w, dim, 0.0f, rows, dim);
    if (bias) bias_add(rows, bias, count, dim);
  }
}

void ops::patch_embed_backward(const float* patches, const float* d_x,
                               const int32_t* counts_host, int64_t batch, int64_t max_patches,
                               int64_t patch_dim, int64_t seq_len, int64_t dim, float* d_w,
                               float* d_bias) {
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t count = counts_host[b];
    if (count <= 0) continue;
    const float* rows = d_x + b * seq_len * dim;
    gemm(true, false, patch_dim, dim, count, 1.0f, patches + b * max_patches * patch_dim,
         patch_dim, rows, dim, 1.0f, d_w, dim);
    if (d_bias) column_sum_accumulate(rows, count, dim, d_bias);
  }
}

}  // namespace msomni::kernels
