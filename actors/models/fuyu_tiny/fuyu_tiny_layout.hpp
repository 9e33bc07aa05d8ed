// fuyu-tiny's shape: dimensions derived from [model], the table of named parameters as
// slices of one flat buffer (model::parameter_layout), and the deterministic
// initialisation from the job seed.
#pragma once

#include "config/job_config.hpp"
#include "model/model.hpp"
#include "model/parameter_layout.hpp"

#include <cstdint>
#include <vector>

namespace msomni::models {

struct fuyu_dims {
  int64_t d_model = 0, layers = 0, heads = 0, head_dim = 0, d_ff = 0;
  int64_t patch_size = 0, patch_dim = 0, patches_per_frame = 0, video_frames = 0;
  int64_t max_patches = 0;  // video_frames * patches_per_frame
  int64_t max_seq_len = 0, vocab = 0;
};

// Offsets of one transformer block's parameters in the flat buffer.
struct fuyu_block {
  int64_t ln1_g, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_g, ln2_b, w_fc, b_fc, w_proj, b_proj;
};

// `params` and `total` (model::parameter_layout) in the order make_fuyu_layout declares
// them; the offsets below are the tensors' places in the flat buffers.
struct fuyu_layout : model::parameter_layout {
  fuyu_dims dims;
  int64_t patch_w = 0, patch_b = 0, tok_emb = 0, pos_emb = 0, lnf_g = 0, lnf_b = 0, w_head = 0;
  std::vector<fuyu_block> blocks;
  // A text fingerprint of the dimensions, stored in checkpoints to refuse mismatched loads.
  std::string signature() const;
};

// Throws std::invalid_argument naming the model.* key that makes the shape impossible.
fuyu_layout make_fuyu_layout(const config::model_section& cfg);

// Host values of every parameter. Each tensor draws from its own named stream
// rng_stream::derive(seed, "model.init.<name>"), so every replica starts identical and
// adding a tensor does not shift the others' values.
std::vector<float> init_fuyu_parameters(const fuyu_layout& layout, uint64_t seed);

}  // namespace msomni::models
