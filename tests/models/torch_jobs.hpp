// The jobs the torch job tests run: the reference module (configs/torch_fuyu_tiny.py) small,
// on synthetic images, videos and text, with the knobs the tests turn (steps, dropout, batch,
// replicas, more [elasticity] keys).
#pragma once

#include <cstdint>
#include <string>

namespace msomni::testing {

// A command line of the msomni CLI (MSOMNI_CLI_BINARY, the test target's definition).
inline std::string cli(const std::string& args) { return std::string(MSOMNI_CLI_BINARY) + " " + args; }

// Synthetic images, videos and text (no files), with no video downgrade (it follows live
// timing, and would change the data between two runs).
inline std::string torch_data_and_io() {
  return "[[data.sources]]\nname = \"shapes\"\nuri = \"synthetic://shapes\"\nmodality = \"image\"\nweight = 2.0\n"
         "[[data.sources]]\nname = \"moving\"\nuri = \"synthetic://shapes\"\nmodality = \"video\"\nweight = 1.0\n"
         "[[data.sources]]\nname = \"text\"\nuri = \"synthetic://text\"\nmodality = \"text\"\nweight = 1.0\n"
         "[io]\ndowngrade_video = false\n";
}

struct fuyu_options {
  int64_t steps = 40;
  std::string dropout = "0.1";
  int64_t global_batch = 8;
  std::string lr = "3e-3";
  int64_t replicas = 2, min_replicas = 1, max_replicas = 2;
  std::string elasticity = "";  // more [elasticity] lines
  int64_t checkpoint_interval = 10;
};

// FuyuTiny at d_model 32 (2 layers, 2 heads), micro-batches of 2, seed 17, on the CPU.
inline std::string fuyu_job(const fuyu_options& o) {
  return "[job]\nname = \"torch-fuyu\"\n[model]\nname = \"torch\"\ntorch_file = \"" + std::string(MSOMNI_SOURCE_DIR) +
         "/configs/torch_fuyu_tiny.py\"\ntorch_class = \"FuyuTiny\"\n"
         "torch_args = { d_model = 32, n_layers = 2, n_heads = 2, d_ff = 64, patch_dim = 192, max_seq_len = 64, "
         "dropout = " + o.dropout + " }\n"
         "image_size = 16\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n" +
         torch_data_and_io() + "[training]\nglobal_batch = " + std::to_string(o.global_batch) +
         "\nmicro_batch = 2\nsteps = " + std::to_string(o.steps) + "\nlr = " + o.lr + "\nseed = 17\ndevice = \"cpu\"\n" +
         "[elasticity]\nreplicas = " + std::to_string(o.replicas) + "\nmin_replicas = " + std::to_string(o.min_replicas) +
         "\nmax_replicas = " + std::to_string(o.max_replicas) + "\n" + o.elasticity +
         "[checkpoint]\ninterval_steps = " + std::to_string(o.checkpoint_interval) + "\n";
}

}  // namespace msomni::testing
