// fuyu-tiny: construction, buffers, checkpoint state and memory estimate (the AdamW step
// is fuyu_tiny_optimizer.cpp).
#include "fuyu_tiny/fuyu_tiny.hpp"

#include "model/flat_state.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

namespace msomni::models {

namespace {

std::unique_ptr<kernels::ops> make_backend(const model::model_context& c) {
  if (c.device == model::compute_device::cuda) return kernels::make_cuda_ops(c.device_index);
  return kernels::make_cpu_ops(c.cpu_threads);
}

// As many as the CPU backend uses: cpu_threads, 0 meaning all hardware threads.
int host_threads_of(const model::model_context& c) {
  if (c.cpu_threads > 0) return c.cpu_threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

fuyu_tiny::fuyu_tiny(const model::model_context& context)
    : context_(context),
      layout_(make_fuyu_layout(context.config)),
      ops_(make_backend(context)),
      host_threads_(host_threads_of(context)) {
  const size_t n = static_cast<size_t>(layout_.total);
  params_ = kernels::device_buffer<float>(*ops_, n);
  grads_ = kernels::device_buffer<float>(*ops_, n);
  adam_m_ = kernels::device_buffer<float>(*ops_, n);
  adam_v_ = kernels::device_buffer<float>(*ops_, n);
  const std::vector<float> init = init_fuyu_parameters(layout_, context.seed);
  ops_->upload(params_.get(), init.data(), params_.bytes());
  ops_->zero(grads_.get(), grads_.bytes());
  ops_->zero(adam_m_.get(), adam_m_.bytes());
  ops_->zero(adam_v_.get(), adam_v_.bytes());
}

model::storage_kind fuyu_tiny::storage() const {
  return ops_->kind() == kernels::backend_kind::cuda ? model::storage_kind::cuda_device
                                                     : model::storage_kind::host;
}

std::span<float> fuyu_tiny::parameter_data() { return {params_.get(), params_.size()}; }
std::span<float> fuyu_tiny::gradient_data() { return {grads_.get(), grads_.size()}; }

void fuyu_tiny::copy_to_host(model::buffer_role which, std::span<float> out) const {
  if (out.size() != params_.size())
    throw std::invalid_argument("fuyu-tiny copy_to_host: buffer holds " +
                                std::to_string(out.size()) + " floats, the model has " +
                                std::to_string(params_.size()));
  const auto& src = which == model::buffer_role::parameters ? params_ : grads_;
  ops_->download(out.data(), src.get(), src.bytes());
}

void fuyu_tiny::copy_from_host(model::buffer_role which, std::span<const float> in) {
  if (in.size() != params_.size())
    throw std::invalid_argument("fuyu-tiny copy_from_host: buffer holds " +
                                std::to_string(in.size()) + " floats, the model has " +
                                std::to_string(params_.size()));
  auto& dst = which == model::buffer_role::parameters ? params_ : grads_;
  ops_->upload(dst.get(), in.data(), dst.bytes());
}

void fuyu_tiny::zero_gradients() { ops_->zero(grads_.get(), grads_.bytes()); }

model::model_state fuyu_tiny::save_state() const {
  // model/flat_state.hpp's entries: param/, adam_m/, adam_v/ per tensor, the step, the
  // signature. One group through host memory at a time.
  model::model_state st;
  std::vector<float> host(params_.size());
  const kernels::device_buffer<float>* groups[] = {&params_, &adam_m_, &adam_v_};
  for (size_t g = 0; g < 3; ++g) {
    ops_->download(host.data(), groups[g]->get(), groups[g]->bytes());
    model::append_flat_tensors(st, layout_, model::flat_state_groups[g], host);
  }
  model::append_flat_blobs(st, step_, layout_.signature());
  return st;
}

void fuyu_tiny::load_state(const model::model_state& st) {
  // Checked and assembled on the host first, so a bad checkpoint leaves the model untouched.
  const auto s = model::read_flat_state(layout_, st, "fuyu-tiny", layout_.signature());
  ops_->upload(params_.get(), s.parameters.data(), params_.bytes());
  ops_->upload(adam_m_.get(), s.adam_m.data(), adam_m_.bytes());
  ops_->upload(adam_v_.get(), s.adam_v.data(), adam_v_.bytes());
  step_ = s.step;
}

model::memory_estimate fuyu_tiny::estimate_memory(int64_t micro_batch, int64_t seq_len) const {
  model::memory_estimate e;
  const int64_t bytes = static_cast<int64_t>(sizeof(float)) * layout_.total;
  e.parameter_bytes = bytes;
  e.gradient_bytes = bytes;
  e.optimizer_bytes = 2 * bytes;
  const int64_t inputs = micro_batch * layout_.dims.max_patches * layout_.dims.patch_dim +
                         micro_batch * seq_len * 3 /*tokens, targets, mask*/;
  e.activation_bytes = static_cast<int64_t>(sizeof(float)) *
                       (fuyu_activation_floats(layout_.dims, micro_batch, seq_len) + inputs);
  return e;
}

}  // namespace msomni::models
