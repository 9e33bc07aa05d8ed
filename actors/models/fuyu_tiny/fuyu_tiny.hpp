// fuyu-tiny: the reference multimodal decoder. Fuyu-style: image or video-frame
// patches are linearly projected straight into the token stream, followed by byte-level
// text tokens, and a pre-LayerNorm causal transformer predicts the next text byte. Each
// sample's sequence is [its patches | its text], run without the micro-batch's padding
// (fuyu_tiny_forward.cpp), so attention needs no key mask. Loss on text targets only.
//
// All compute goes through kernels::ops, so the same code runs on the CPU reference and on
// CUDA. Parameters, gradients and AdamW moments are each one flat buffer in the backend's
// memory, laid out by fuyu_layout (a model::parameter_layout). The optimizer step and the
// checkpoint state are the embedding API's helpers (model/adamw.hpp, model/flat_state.hpp),
// the ones a plugin model uses.
#pragma once

#include "fuyu_tiny/fuyu_tiny_layout.hpp"
#include "model/model.hpp"
#include "ops.hpp"

#include <memory>
#include <vector>

namespace msomni::models {

class fuyu_tiny final : public model::trainable_model {
 public:
  explicit fuyu_tiny(const model::model_context& context);

  std::string name() const override { return "fuyu-tiny"; }
  model::storage_kind storage() const override;
  const std::vector<model::parameter_info>& parameters() const override {
    return layout_.params;
  }
  std::span<float> parameter_data() override;
  std::span<float> gradient_data() override;
  void copy_to_host(model::buffer_role which, std::span<float> out) const override;
  void copy_from_host(model::buffer_role which, std::span<const float> in) override;

  void zero_gradients() override;
  model::loss_report forward_backward(const model::micro_batch& batch, float grad_scale) override;
  model::loss_report evaluate(const model::micro_batch& batch) override;
  model::optimizer_report optimizer_step(const model::optimizer_settings& settings) override;

  model::model_state save_state() const override;
  void load_state(const model::model_state& state) override;
  model::memory_estimate estimate_memory(int64_t micro_batch, int64_t seq_len) const override;
  void release_batch_buffers() override {
    work_.reset();
    inputs_.reset();
  }

  const fuyu_layout& layout() const { return layout_; }
  kernels::ops& backend() const { return *ops_; }

 private:
  // Activations and backward scratch for one (batch, seq_len); see fuyu_tiny_forward.cpp.
  struct workspace;
  struct batch_inputs;

  void prepare(const model::micro_batch& batch);
  double run_forward(float loss_grad_scale);
  void run_backward();

  model::model_context context_;
  fuyu_layout layout_;
  std::unique_ptr<kernels::ops> ops_;
  kernels::device_buffer<float> params_, grads_, adam_m_, adam_v_;
  int64_t step_ = 0;
  int host_threads_ = 1;                // the CPU optimizer's threads (model_context::cpu_threads)
  std::shared_ptr<workspace> work_;     // shared_ptr: incomplete type with a defaulted dtor
  std::shared_ptr<batch_inputs> inputs_;
};

// Activation floats one micro-batch needs (forward + backward), the basis of
// estimate_memory and of the workspace allocation, so the two cannot drift apart.
int64_t fuyu_activation_floats(const fuyu_dims& d, int64_t batch, int64_t seq_len);

}  // namespace msomni::models
