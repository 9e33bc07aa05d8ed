// A base class for models whose buffers live in host memory: it owns the flat parameter,
// gradient and AdamW buffers of a parameter_layout and implements everything of
// trainable_model but the model itself: parameters(), the buffers and their copies,
// zero_gradients(), optimizer_step() (adamw.hpp) and save_state()/load_state()
// (flat_state.hpp). A model declares its tensors in its constructor, initialises them and
// writes name(), forward_backward(), evaluate() and estimate_memory():
//
//   class my_model final : public msomni::model::host_model {
//    public:
//     explicit my_model(const model_context& c) : host_model(c.cpu_threads) {
//       w_ = declare("proj.w", {in, out}, true);
//       b_ = declare("proj.b", {out}, false);
//       float* w = parameter_data().data() + w_;   // initialise from c.seed
//     }
//     ...
//    private:
//     int64_t w_, b_;   // offsets into parameter_data() and gradient_data()
//   };
//
// Header-only.
#pragma once

#include "model/adamw.hpp"
#include "model/flat_state.hpp"
#include "model/model.hpp"
#include "model/parameter_layout.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace msomni::model {

class host_model : public trainable_model {
 public:
  storage_kind storage() const override { return storage_kind::host; }
  const std::vector<parameter_info>& parameters() const override { return layout_.params; }
  std::span<float> parameter_data() override { return params_; }
  std::span<float> gradient_data() override { return grads_; }

  void copy_to_host(buffer_role which, std::span<float> out) const override {
    const auto& src = which == buffer_role::parameters ? params_ : grads_;
    check_size("copy_to_host", out.size());
    std::memcpy(out.data(), src.data(), sizeof(float) * src.size());
  }
  void copy_from_host(buffer_role which, std::span<const float> in) override {
    auto& dst = which == buffer_role::parameters ? params_ : grads_;
    check_size("copy_from_host", in.size());
    std::memcpy(dst.data(), in.data(), sizeof(float) * dst.size());
  }

  void zero_gradients() override { std::fill(grads_.begin(), grads_.end(), 0.0f); }

  optimizer_report optimizer_step(const optimizer_settings& settings) override {
    return adamw_step(layout_, settings, {params_, grads_, adam_m_, adam_v_}, step_, threads_);
  }

  model_state save_state() const override {
    return save_flat_state(layout_, {params_, adam_m_, adam_v_}, step_, state_signature());
  }
  void load_state(const model_state& state) override {
    auto s = read_flat_state(layout_, state, name(), state_signature());
    params_ = std::move(s.parameters);
    adam_m_ = std::move(s.adam_m);
    adam_v_ = std::move(s.adam_v);
    step_ = s.step;
  }

  const parameter_layout& layout() const { return layout_; }
  // Optimizer steps taken (skipped ones not counted); saved as "optimizer/step".
  int64_t optimizer_steps() const { return step_; }

 protected:
  // `threads`: the optimizer's host threads when built with OpenMP (model_context's
  // cpu_threads: 0 = all hardware threads).
  explicit host_model(int threads = 1)
      : threads_(threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {}

  // Declares a tensor (parameter_layout::add), zero in every buffer, and returns its offset
  // in parameter_data() and gradient_data(). Call it in the constructor, before anything
  // reads the buffers: each call reallocates them.
  int64_t declare(std::string name, std::vector<int64_t> shape, bool weight_decay) {
    const int64_t offset = layout_.add(std::move(name), std::move(shape), weight_decay);
    const auto n = static_cast<size_t>(layout_.total);
    params_.resize(n, 0.0f);
    grads_.resize(n, 0.0f);
    adam_m_.resize(n, 0.0f);
    adam_v_.resize(n, 0.0f);
    return offset;
  }

  // A text fingerprint of the model's shape, saved as "model/signature" and required equal
  // on load; empty (the default) saves none.
  virtual std::string state_signature() const { return {}; }

  // Bytes of the four flat buffers, for estimate_memory (add the activations).
  memory_estimate state_memory() const {
    const auto bytes = static_cast<int64_t>(sizeof(float)) * layout_.total;
    memory_estimate e;
    e.parameter_bytes = bytes;
    e.gradient_bytes = bytes;
    e.optimizer_bytes = 2 * bytes;
    return e;
  }

 private:
  void check_size(const char* what, size_t have) const {
    if (have != params_.size())
      throw std::invalid_argument(name() + " " + what + ": buffer holds " + std::to_string(have) +
                                  " floats, the model has " + std::to_string(params_.size()));
  }

  parameter_layout layout_;
  std::vector<float> params_, grads_, adam_m_, adam_v_;
  int64_t step_ = 0;
  int threads_ = 1;
};

}  // namespace msomni::model
