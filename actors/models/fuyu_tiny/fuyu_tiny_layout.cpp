// fuyu-tiny parameter table and initialisation (see fuyu_tiny_layout.hpp).
#include "fuyu_tiny/fuyu_tiny_layout.hpp"

#include "core/rng.hpp"
#include "model/text_tokens.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace msomni::models {

namespace {

void require(bool ok, const std::string& why) {
  if (!ok) throw std::invalid_argument("fuyu-tiny: " + why);
}

}  // namespace

std::string fuyu_layout::signature() const {
  const auto& d = dims;
  return "fuyu-tiny d_model=" + std::to_string(d.d_model) + " layers=" +
         std::to_string(d.layers) + " heads=" + std::to_string(d.heads) + " d_ff=" +
         std::to_string(d.d_ff) + " patch_dim=" + std::to_string(d.patch_dim) +
         " max_seq_len=" + std::to_string(d.max_seq_len) + " vocab=" + std::to_string(d.vocab);
}

fuyu_layout make_fuyu_layout(const config::model_section& cfg) {
  require(cfg.d_model > 0 && cfg.n_layers > 0 && cfg.n_heads > 0 && cfg.d_ff > 0,
          "model.d_model, n_layers, n_heads and d_ff must be positive");
  require(cfg.d_model % cfg.n_heads == 0,
          "model.d_model (" + std::to_string(cfg.d_model) + ") must be divisible by model.n_heads (" +
              std::to_string(cfg.n_heads) + ")");
  require(cfg.patch_size > 0 && cfg.image_size > 0 && cfg.image_size % cfg.patch_size == 0,
          "model.image_size (" + std::to_string(cfg.image_size) +
              ") must be a positive multiple of model.patch_size (" +
              std::to_string(cfg.patch_size) + ")");
  require(cfg.video_frames >= 1, "model.video_frames must be at least 1");
  require(cfg.vocab_size >= model::byte_vocab_size,
          "model.vocab_size (" + std::to_string(cfg.vocab_size) +
              ") must hold 256 bytes and the specials (" +
              std::to_string(model::byte_vocab_size) + ")");
  fuyu_layout l;
  fuyu_dims& d = l.dims;
  d.d_model = cfg.d_model;
  d.layers = cfg.n_layers;
  d.heads = cfg.n_heads;
  d.head_dim = cfg.d_model / cfg.n_heads;
  d.d_ff = cfg.d_ff;
  d.patch_size = cfg.patch_size;
  d.patch_dim = cfg.patch_size * cfg.patch_size * 3;
  const int64_t side = cfg.image_size / cfg.patch_size;
  d.patches_per_frame = side * side;
  d.video_frames = cfg.video_frames;
  d.max_patches = d.video_frames * d.patches_per_frame;
  d.max_seq_len = cfg.max_seq_len;
  d.vocab = cfg.vocab_size;
  require(d.max_seq_len >= d.max_patches + 2,
          "model.max_seq_len (" + std::to_string(d.max_seq_len) +
              ") leaves no room for text after " + std::to_string(d.max_patches) +
              " video patches (video_frames * (image_size / patch_size)^2)");

  const int64_t D = d.d_model, F = d.d_ff;
  l.patch_w = l.add("patch_proj.w", {d.patch_dim, D}, true);
  l.patch_b = l.add("patch_proj.b", {D}, false);
  l.tok_emb = l.add("tok_emb", {d.vocab, D}, true);
  l.pos_emb = l.add("pos_emb", {d.max_seq_len, D}, true);
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string p = "layer" + std::to_string(i) + ".";
    fuyu_block k{};
    k.ln1_g = l.add(p + "ln1.g", {D}, false);
    k.ln1_b = l.add(p + "ln1.b", {D}, false);
    k.w_qkv = l.add(p + "attn.w_qkv", {D, 3 * D}, true);
    k.b_qkv = l.add(p + "attn.b_qkv", {3 * D}, false);
    k.w_o = l.add(p + "attn.w_o", {D, D}, true);
    k.b_o = l.add(p + "attn.b_o", {D}, false);
    k.ln2_g = l.add(p + "ln2.g", {D}, false);
    k.ln2_b = l.add(p + "ln2.b", {D}, false);
    k.w_fc = l.add(p + "mlp.w_fc", {D, F}, true);
    k.b_fc = l.add(p + "mlp.b_fc", {F}, false);
    k.w_proj = l.add(p + "mlp.w_proj", {F, D}, true);
    k.b_proj = l.add(p + "mlp.b_proj", {D}, false);
    l.blocks.push_back(k);
  }
  l.lnf_g = l.add("ln_f.g", {D}, false);
  l.lnf_b = l.add("ln_f.b", {D}, false);
  l.w_head = l.add("lm_head.w", {D, d.vocab}, true);
  return l;
}

std::vector<float> init_fuyu_parameters(const fuyu_layout& layout, uint64_t seed) {
  std::vector<float> values(static_cast<size_t>(layout.total), 0.0f);
  // GPT-2 style: N(0, 0.02) weights, residual projections shrunk by 1/sqrt(2 * layers) so
  // the residual stream's variance does not grow with depth; biases 0, norm gains 1.
  const float std_base = 0.02f;
  const float std_resid = std_base / std::sqrt(2.0f * static_cast<float>(layout.dims.layers));
  auto ends_with = [](const std::string& s, const char* suffix) {
    const std::string t(suffix);
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  for (const auto& p : layout.params) {
    float* out = values.data() + p.offset;
    if (ends_with(p.name, ".g")) {
      for (int64_t i = 0; i < p.size; ++i) out[i] = 1.0f;
      continue;
    }
    if (p.shape.size() < 2) continue;  // biases stay zero
    const float stddev = (ends_with(p.name, "w_o") || ends_with(p.name, "w_proj")) ? std_resid
                                                                                  : std_base;
    auto rng = rng_stream::derive(seed, "model.init." + p.name);
    for (int64_t i = 0; i < p.size; ++i) out[i] = stddev * rng.normal();
  }
  return values;
}

}  // namespace msomni::models
