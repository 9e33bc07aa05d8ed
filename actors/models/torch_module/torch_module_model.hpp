// model.name = "torch": a user's PyTorch nn.Module trained as an msomni model
// (docs/torch_models.md). The module runs in a Python worker process (python_worker); its
// parameters and gradients are msomni's flat buffers in memory shared with that process, so
// the rank all-reduces the gradients the module's backward wrote and msomni's AdamW
// (model/adamw.hpp) updates the weights the module computes with, with no copy per step. Each
// micro-batch is written into shared memory too and wrapped as tensors there.
//
// Memory: the flat buffers, AdamW's moments and the shared micro-batch count in the process's
// memory account (kernels/memory), and so does each training micro-batch's activations, as
// the worker measured them (the bytes autograd saved for backward), for that micro-batch: the
// rank's samples and peak see them, and its budget refuses them as out of memory.
//
// The checkpoint state is model/flat_state.hpp's (param/, adam_m/, adam_v/ under the module's
// own parameter names, optimizer/step, model/signature) plus the rest of the module's
// state_dict: "torch/buffers" and, when it ties parameters, "model/torch_aliases"
// (torch_state_dict.hpp).
#pragma once

#include "memory/memory_account.hpp"
#include "model/model.hpp"
#include "model/parameter_layout.hpp"
#include "torch_module/charged_memory.hpp"
#include "torch_module/python_worker.hpp"
#include "torch_module/shared_region.hpp"
#include "torch_module/torch_state_dict.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msomni::models {

class torch_module_model final : public model::trainable_model {
 public:
  // Starts the worker, builds the module and shares its parameters. Throws
  // torch_module_error naming the [model] key and the user's FILE:LINE.
  explicit torch_module_model(const model::model_context& context);

  std::string name() const override { return "torch"; }
  model::storage_kind storage() const override { return model::storage_kind::host; }
  const std::vector<model::parameter_info>& parameters() const override { return layout_.params; }
  std::span<float> parameter_data() override { return params_.as<float>(total()); }
  std::span<float> gradient_data() override { return grads_.as<float>(total()); }
  void copy_to_host(model::buffer_role which, std::span<float> out) const override;
  void copy_from_host(model::buffer_role which, std::span<const float> in) override;

  void zero_gradients() override;
  model::loss_report forward_backward(const model::micro_batch& batch, float grad_scale) override;
  model::loss_report evaluate(const model::micro_batch& batch) override;
  model::optimizer_report optimizer_step(const model::optimizer_settings& settings) override;

  model::model_state save_state() const override;
  void load_state(const model::model_state& state) override;
  model::memory_estimate estimate_memory(int64_t micro_batch, int64_t seq_len) const override;

  // Training and evaluation forward on `batch`, refusing a loss that is not finite, then the
  // gradients zeroed: the check msomni-run makes before anything starts.
  double probe(const model::micro_batch& batch);
  // "CLASS (FILE:LINE), Python X, torch Y".
  std::string description() const;
  // The worker process (diagnostics, tests).
  pid_t worker_pid() const { return worker_->pid(); }
  // The activations of the last training micro-batch, in bytes (saved_activations.py).
  uint64_t last_activation_bytes() const { return last_activation_bytes_; }

  // Where the module's parameters and their .grad lie now, as the worker sees them: bytes into
  // the shared parameter and gradient buffers, -1 where one lies outside them.
  struct placement {
    std::string name;
    int64_t value_offset = -1;
    int64_t grad_offset = -1;
  };
  std::vector<placement> placements() const;

 private:
  size_t total() const { return static_cast<size_t>(layout_.total); }
  double run(const model::micro_batch& batch, bool train, float grad_scale, bool require_finite);

  model::model_context context_;
  std::shared_ptr<kernels::memory_account> account_;
  std::unique_ptr<python_worker> worker_;
  model::parameter_layout layout_;
  shared_region params_, grads_, batch_;
  std::vector<float> adam_m_, adam_v_;
  // Declared after what they count, so they leave the account first.
  charged_memory params_charge_, grads_charge_, adam_m_charge_, adam_v_charge_, batch_charge_;
  uint64_t last_activation_bytes_ = 0;
  int64_t step_ = 0;         // optimizer steps taken
  int threads_ = 1;
  std::string class_where_;  // where the module's class is defined
  std::string signature_;
  std::map<std::string, std::string> aliases_;  // state_dict name -> parameter name
};

}  // namespace msomni::models
