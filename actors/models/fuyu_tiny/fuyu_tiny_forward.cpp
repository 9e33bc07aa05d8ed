// fuyu-tiny forward and backward passes over one micro-batch (see fuyu_tiny.hpp).
//
// The micro-batch pads every sample to max_patches + text_len positions, but a sample's
// sequence is only its own patches and its text: the passes run over those rows alone,
// sample after sample ([sample 0: c_0 patches | T text][sample 1: ...]...). Causal attention
// never lets a real position see a padded one, and the loss never reads one, so skipping
// them changes no real position's value; it saves the padded rows' share of every GEMM and
// the square of it in attention (a text-only sample beside a video has most of its padded
// sequence empty). The workspace keeps the padded shape's size, so memory does not move with
// the mix of the batch.
#include "fuyu_tiny/fuyu_tiny.hpp"

#include <stdexcept>
#include <string>

namespace msomni::models {

using kernels::device_buffer;

namespace {
constexpr float ln_eps = 1e-5f;
}

// Per-layer saved activations plus backward scratch. Sizes follow fuyu_activation_floats.
struct fuyu_tiny::workspace {
  int64_t batch = 0, seq_len = 0;
  std::vector<device_buffer<float>> x;  // layers + 1 residual streams [N, D]
  std::vector<device_buffer<float>> ln1, mean1, rstd1, qkv, probs, att, h, ln2, mean2, rstd2, u,
      g;
  device_buffer<float> lnf, meanf, rstdf, logits, tmp;
  device_buffer<float> dx, dh, d_ln, d_att, d_qkv, d_ff, d_scores;
};

struct fuyu_tiny::batch_inputs {
  int64_t batch = 0, max_patches = 0, text_len = 0, seq_len = 0;
  int64_t target_tokens = 0, input_tokens = 0;
  int64_t rows = 0;                      // the real rows: sum over samples of c_b + text_len
  std::vector<int64_t> row_at, prob_at;  // [B + 1]: sample b's first row and attention entry
  std::vector<int32_t> counts_host;
  int64_t first_row(int64_t b) const { return row_at[static_cast<size_t>(b)]; }
  int64_t seq_of(int64_t b) const { return row_at[static_cast<size_t>(b + 1)] - row_at[static_cast<size_t>(b)]; }
  device_buffer<float> patches, mask;
  device_buffer<int32_t> tokens, offsets, targets;
};

int64_t fuyu_activation_floats(const fuyu_dims& d, int64_t batch, int64_t seq_len) {
  const int64_t N = batch * seq_len, D = d.d_model, F = d.d_ff;
  const int64_t att = batch * d.heads * seq_len * seq_len;
  // Per layer: x, ln1, att, h, ln2 (5ND), qkv (3ND), two means and rstds, probs, u and g.
  const int64_t per_layer = 8 * N * D + 4 * N + att + 2 * N * F;
  // Final residual stream, ln_f with its statistics, logits, one temporary.
  const int64_t head = 3 * N * D + 2 * N + N * d.vocab;
  // Backward: dx, dh, d_ln, d_att, d_qkv, d_ff, d_scores.
  const int64_t scratch = 4 * N * D + 3 * N * D + N * F + att;
  return d.layers * per_layer + head + scratch;
}

void fuyu_tiny::prepare(const model::micro_batch& mb) {
  mb.validate();
  const fuyu_dims& d = layout_.dims;
  auto fail = [](const std::string& why) { throw std::invalid_argument("fuyu-tiny: " + why); };
  if (mb.patch_dim != d.patch_dim && mb.max_patches > 0)
    fail("micro-batch patch_dim " + std::to_string(mb.patch_dim) + " != model patch_dim " +
         std::to_string(d.patch_dim) + " (patch_size^2 * 3)");
  const int64_t S = mb.max_patches + mb.text_len;
  if (S > d.max_seq_len)
    fail("sequence of " + std::to_string(mb.max_patches) + " patches + " +
         std::to_string(mb.text_len) + " text tokens exceeds model.max_seq_len " +
         std::to_string(d.max_seq_len));
  for (int64_t b = 0; b < mb.batch; ++b) {
    const int32_t c = mb.patch_counts[static_cast<size_t>(b)];
    if (c % d.patches_per_frame != 0 || c > d.max_patches)
      fail("sample " + std::to_string(b) + " has " + std::to_string(c) +
           " patches; expected whole frames of " + std::to_string(d.patches_per_frame) +
           ", at most " + std::to_string(d.video_frames) + " frames");
  }
  for (size_t i = 0; i < mb.tokens.size(); ++i)
    if (mb.tokens[i] < 0 || mb.tokens[i] >= d.vocab)
      fail("token " + std::to_string(mb.tokens[i]) + " at flat index " + std::to_string(i) +
           " is outside the vocabulary [0, " + std::to_string(d.vocab) + ")");

  const int64_t B = mb.batch, T = mb.text_len, N = B * S;
  if (!inputs_ || inputs_->batch != B || inputs_->max_patches != mb.max_patches ||
      inputs_->text_len != T) {
    inputs_.reset();  // the old buffers go before the new ones are allocated: the peak is one set
    auto in = std::make_shared<batch_inputs>();
    in->batch = B;
    in->max_patches = mb.max_patches;
    in->text_len = T;
    in->seq_len = S;
    in->patches = device_buffer<float>(*ops_, static_cast<size_t>(B * mb.max_patches * d.patch_dim));
    in->mask = device_buffer<float>(*ops_, static_cast<size_t>(N));
    in->tokens = device_buffer<int32_t>(*ops_, static_cast<size_t>(B * T));
    in->offsets = device_buffer<int32_t>(*ops_, static_cast<size_t>(B));
    in->targets = device_buffer<int32_t>(*ops_, static_cast<size_t>(N));
    inputs_ = std::move(in);
  }
  batch_inputs& in = *inputs_;
  in.counts_host = mb.patch_counts;
  in.input_tokens = mb.input_tokens();
  in.row_at.assign(static_cast<size_t>(B + 1), 0);
  in.prob_at.assign(static_cast<size_t>(B + 1), 0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = mb.patch_counts[static_cast<size_t>(b)] + T;
    in.row_at[static_cast<size_t>(b + 1)] = in.row_at[static_cast<size_t>(b)] + len;
    in.prob_at[static_cast<size_t>(b + 1)] = in.prob_at[static_cast<size_t>(b)] + d.heads * len * len;
  }
  in.rows = in.row_at.back();
  // The inputs go up while the host builds the targets below: asynchronous from the pinned
  // memory the rank's data pipeline packs into. `mb` outlives the copies: the loss read at
  // the end of the forward pass waits for the device, which waits for them.
  if (!mb.patches.empty()) ops_->upload_async(in.patches.get(), mb.patches.data(), in.patches.bytes());
  ops_->upload_async(in.tokens.get(), mb.tokens.data(), in.tokens.bytes());
  ops_->upload_async(in.offsets.get(), mb.patch_counts.data(), in.offsets.bytes());
  // Position c_b + t predicts token t + 1 of sample b; everything else carries no loss.
  std::vector<int32_t> targets(static_cast<size_t>(N), 0);
  std::vector<float> mask(static_cast<size_t>(N), 0.0f);
  int64_t count = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t + 1 < T; ++t) {
      const size_t src = static_cast<size_t>(b * T + t + 1);
      if (!mb.loss_mask[src]) continue;
      const size_t row = static_cast<size_t>(in.row_at[static_cast<size_t>(b)] + mb.patch_counts[static_cast<size_t>(b)] + t);
      targets[row] = mb.tokens[src];
      mask[row] = 1.0f;
      ++count;
    }
  in.target_tokens = count;
  ops_->upload_async(in.targets.get(), targets.data(), in.targets.bytes());
  ops_->upload_async(in.mask.get(), mask.data(), in.mask.bytes());
  ops_->finish_uploads();  // the kernels below wait for the copies on the device, not here

  if (!work_ || work_->batch != B || work_->seq_len != S) {
    const int64_t D = d.d_model, F = d.d_ff, L = d.layers;
    const size_t nd = static_cast<size_t>(N * D), n = static_cast<size_t>(N);
    const size_t nf = static_cast<size_t>(N * F);
    const size_t att = static_cast<size_t>(B * d.heads * S * S);
    // The old workspace is freed before the new one is allocated, so a change of shape peaks at
    // the larger of the two, not at their sum.
    work_.reset();
    auto w = std::make_shared<workspace>();
    w->batch = B;
    w->seq_len = S;
    auto make = [&](std::vector<device_buffer<float>>& v, size_t count_each) {
      for (int64_t l = 0; l < L; ++l) v.emplace_back(*ops_, count_each);
    };
    for (int64_t l = 0; l <= L; ++l) w->x.emplace_back(*ops_, nd);
    make(w->ln1, nd), make(w->mean1, n), make(w->rstd1, n), make(w->qkv, 3 * nd);
    make(w->probs, att), make(w->att, nd), make(w->h, nd), make(w->ln2, nd);
    make(w->mean2, n), make(w->rstd2, n), make(w->u, nf), make(w->g, nf);
    w->lnf = device_buffer<float>(*ops_, nd);
    w->meanf = device_buffer<float>(*ops_, n);
    w->rstdf = device_buffer<float>(*ops_, n);
    w->logits = device_buffer<float>(*ops_, static_cast<size_t>(N * d.vocab));
    w->tmp = device_buffer<float>(*ops_, nd);
    w->dx = device_buffer<float>(*ops_, nd);
    w->dh = device_buffer<float>(*ops_, nd);
    w->d_ln = device_buffer<float>(*ops_, nd);
    w->d_att = device_buffer<float>(*ops_, nd);
    w->d_qkv = device_buffer<float>(*ops_, 3 * nd);
    w->d_ff = device_buffer<float>(*ops_, nf);
    w->d_scores = device_buffer<float>(*ops_, att);
    work_ = std::move(w);
  }
}

double fuyu_tiny::run_forward(float loss_grad_scale) {
  kernels::ops& o = *ops_;
  const fuyu_dims& d = layout_.dims;
  batch_inputs& in = *inputs_;
  workspace& w = *work_;
  const int64_t B = in.batch, T = in.text_len, N = in.rows;
  const int64_t D = d.d_model, F = d.d_ff, H = d.heads;
  const float* P = params_.get();

  float* x0 = w.x[0].get();
  o.zero(x0, static_cast<size_t>(N * D) * sizeof(float));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = in.seq_of(b);
    float* xb = x0 + in.first_row(b) * D;
    o.patch_embed_forward(in.patches.get() + b * in.max_patches * d.patch_dim, P + layout_.patch_w,
                          P + layout_.patch_b, in.counts_host.data() + b, 1, in.max_patches, d.patch_dim, len, D, xb);
    o.token_embed_forward(in.tokens.get() + b * T, in.offsets.get() + b, P + layout_.tok_emb, 1, T, len, D, xb);
    o.position_embed_forward(P + layout_.pos_emb, 1, len, D, xb);
  }
  for (int64_t l = 0; l < d.layers; ++l) {
    const fuyu_block& k = layout_.blocks[static_cast<size_t>(l)];
    const size_t i = static_cast<size_t>(l);
    o.layer_norm_forward(w.x[i].get(), P + k.ln1_g, P + k.ln1_b, N, D, ln_eps, w.ln1[i].get(),
                         w.mean1[i].get(), w.rstd1[i].get());
    o.linear_forward(w.ln1[i].get(), P + k.w_qkv, P + k.b_qkv, N, D, 3 * D, w.qkv[i].get());
    for (int64_t b = 0; b < B; ++b)
      o.attention_forward(w.qkv[i].get() + in.first_row(b) * 3 * D, 1, in.seq_of(b), H, d.head_dim,
                          w.probs[i].get() + in.prob_at[static_cast<size_t>(b)], w.att[i].get() + in.first_row(b) * D);
    o.linear_forward(w.att[i].get(), P + k.w_o, P + k.b_o, N, D, D, w.tmp.get());
    o.add(w.x[i].get(), w.tmp.get(), N * D, w.h[i].get());
    o.layer_norm_forward(w.h[i].get(), P + k.ln2_g, P + k.ln2_b, N, D, ln_eps, w.ln2[i].get(),
                         w.mean2[i].get(), w.rstd2[i].get());
    o.linear_forward(w.ln2[i].get(), P + k.w_fc, P + k.b_fc, N, D, F, w.u[i].get());
    o.gelu_forward(w.u[i].get(), N * F, w.g[i].get());
    o.linear_forward(w.g[i].get(), P + k.w_proj, P + k.b_proj, N, F, D, w.tmp.get());
    o.add(w.h[i].get(), w.tmp.get(), N * D, w.x[i + 1].get());
  }
  const size_t last = static_cast<size_t>(d.layers);
  o.layer_norm_forward(w.x[last].get(), P + layout_.lnf_g, P + layout_.lnf_b, N, D, ln_eps,
                       w.lnf.get(), w.meanf.get(), w.rstdf.get());
  o.linear_forward(w.lnf.get(), P + layout_.w_head, nullptr, N, D, d.vocab, w.logits.get());
  // The logits buffer becomes d_logits in place: the forward activations are all we keep.
  return o.cross_entropy(w.logits.get(), in.targets.get(), in.mask.get(), N, d.vocab,
                         loss_grad_scale, w.logits.get());
}

void fuyu_tiny::run_backward() {
  kernels::ops& o = *ops_;
  const fuyu_dims& d = layout_.dims;
  batch_inputs& in = *inputs_;
  workspace& w = *work_;
  const int64_t B = in.batch, T = in.text_len, N = in.rows;
  const int64_t D = d.d_model, F = d.d_ff, H = d.heads;
  const float* P = params_.get();
  float* G = grads_.get();
  const size_t nd_bytes = static_cast<size_t>(N * D) * sizeof(float);

  const size_t last = static_cast<size_t>(d.layers);
  o.linear_backward(w.logits.get(), w.lnf.get(), P + layout_.w_head, N, D, d.vocab,
                    w.d_ln.get(), G + layout_.w_head, nullptr);
  o.zero(w.dx.get(), nd_bytes);
  o.layer_norm_backward(w.d_ln.get(), w.x[last].get(), P + layout_.lnf_g, w.meanf.get(),
                        w.rstdf.get(), N, D, w.dx.get(), G + layout_.lnf_g, G + layout_.lnf_b);
  for (int64_t l = d.layers - 1; l >= 0; --l) {
    const fuyu_block& k = layout_.blocks[static_cast<size_t>(l)];
    const size_t i = static_cast<size_t>(l);
    // x[l+1] = h + proj(gelu(fc(ln2(h))))
    o.linear_backward(w.dx.get(), w.g[i].get(), P + k.w_proj, N, F, D, w.d_ff.get(),
                      G + k.w_proj, G + k.b_proj);
    o.gelu_backward(w.u[i].get(), w.d_ff.get(), N * F, w.d_ff.get());
    o.linear_backward(w.d_ff.get(), w.ln2[i].get(), P + k.w_fc, N, D, F, w.d_ln.get(),
                      G + k.w_fc, G + k.b_fc);
    o.copy(w.dh.get(), w.dx.get(), nd_bytes);
    o.layer_norm_backward(w.d_ln.get(), w.h[i].get(), P + k.ln2_g, w.mean2[i].get(),
                          w.rstd2[i].get(), N, D, w.dh.get(), G + k.ln2_g, G + k.ln2_b);
    // h = x[l] + o(attention(qkv(ln1(x[l]))))
    o.linear_backward(w.dh.get(), w.att[i].get(), P + k.w_o, N, D, D, w.d_att.get(), G + k.w_o,
                      G + k.b_o);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t row = in.first_row(b), at = in.prob_at[static_cast<size_t>(b)];
      o.attention_backward(w.d_att.get() + row * D, w.qkv[i].get() + row * 3 * D, w.probs[i].get() + at, 1,
                           in.seq_of(b), H, d.head_dim, w.d_scores.get() + at, w.d_qkv.get() + row * 3 * D);
    }
    o.linear_backward(w.d_qkv.get(), w.ln1[i].get(), P + k.w_qkv, N, D, 3 * D, w.d_ln.get(),
                      G + k.w_qkv, G + k.b_qkv);
    o.copy(w.dx.get(), w.dh.get(), nd_bytes);
    o.layer_norm_backward(w.d_ln.get(), w.x[i].get(), P + k.ln1_g, w.mean1[i].get(),
                          w.rstd1[i].get(), N, D, w.dx.get(), G + k.ln1_g, G + k.ln1_b);
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = in.seq_of(b);
    const float* dxb = w.dx.get() + in.first_row(b) * D;
    o.patch_embed_backward(in.patches.get() + b * in.max_patches * d.patch_dim, dxb, in.counts_host.data() + b, 1,
                           in.max_patches, d.patch_dim, len, D, G + layout_.patch_w, G + layout_.patch_b);
    o.token_embed_backward(in.tokens.get() + b * T, in.offsets.get() + b, dxb, 1, T, len, D, d.vocab,
                           G + layout_.tok_emb);
    o.position_embed_backward(dxb, 1, len, D, G + layout_.pos_emb);
  }
}

model::loss_report fuyu_tiny::forward_backward(const model::micro_batch& batch,
                                               float grad_scale) {
  prepare(batch);
  const int64_t count = inputs_->target_tokens;
  model::loss_report r{0.0, count, inputs_->input_tokens};
  if (count == 0) return r;  // nothing to learn from; gradients unchanged
  const double sum = run_forward(grad_scale / static_cast<float>(count));
  run_backward();
  r.loss = sum / static_cast<double>(count);
  return r;
}

model::loss_report fuyu_tiny::evaluate(const model::micro_batch& batch) {
  prepare(batch);
  const int64_t count = inputs_->target_tokens;
  model::loss_report r{0.0, count, inputs_->input_tokens};
  if (count == 0) return r;
  r.loss = run_forward(0.0f) / static_cast<double>(count);
  return r;
}

}  // namespace msomni::models
