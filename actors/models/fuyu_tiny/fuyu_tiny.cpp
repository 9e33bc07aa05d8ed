// fuyu-tiny: construction, buffers, AdamW step, checkpoint state and memory estimate.
#include "fuyu_tiny/fuyu_tiny.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace msomni::models {

namespace {

std::unique_ptr<kernels::ops> make_backend(const model::model_context& c) {
  if (c.device == model::compute_device::cuda) return kernels::make_cuda_ops(c.device_index);
  return kernels::make_cpu_ops(c.cpu_threads);
}

}  // namespace

fuyu_tiny::fuyu_tiny(const model::model_context& context)
    : context_(context), layout_(make_fuyu_layout(context.config)), ops_(make_backend(context)) {
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

model::optimizer_report fuyu_tiny::optimizer_step(const model::optimizer_settings& s) {
  model::optimizer_report r;
  const double sum = ops_->sum_squares(grads_.get(), static_cast<int64_t>(grads_.size()));
  r.grad_norm = std::sqrt(sum) * s.gradient_scale;
  if (!std::isfinite(r.grad_norm)) {
    // A NaN/Inf gradient would poison every weight and both moments; keep the old state
    // and let the caller decide (log, lower lr, roll back).
    r.skipped = true;
    r.step = step_;
    return r;
  }
  r.clip_coefficient = kernels::clip_coefficient(r.grad_norm, s.grad_clip);
  ++step_;
  r.step = step_;
  for (const auto& p : layout_.params) {
    kernels::adamw_params a;
    a.lr = static_cast<float>(s.lr);
    a.beta1 = static_cast<float>(s.beta1);
    a.beta2 = static_cast<float>(s.beta2);
    a.eps = static_cast<float>(s.eps);
    a.weight_decay = p.weight_decay ? static_cast<float>(s.weight_decay) : 0.0f;
    a.grad_scale = static_cast<float>(s.gradient_scale * r.clip_coefficient);
    a.step = step_;
    ops_->adamw_update(grads_.get() + p.offset, p.size, a, params_.get() + p.offset,
                       adam_m_.get() + p.offset, adam_v_.get() + p.offset);
  }
  return r;
}

model::model_state fuyu_tiny::save_state() const {
  model::model_state st;
  std::vector<float> host(params_.size());
  const std::pair<const char*, const kernels::device_buffer<float>*> groups[] = {
      {"param/", &params_}, {"adam_m/", &adam_m_}, {"adam_v/", &adam_v_}};
  for (const auto& [prefix, buf] : groups) {
    ops_->download(host.data(), buf->get(), buf->bytes());
    for (const auto& p : layout_.params)
      st.tensors.push_back(model::state_tensor{
          prefix + p.name, p.shape,
          std::vector<float>(host.begin() + p.offset, host.begin() + p.offset + p.size)});
  }
  st.put_int64("optimizer/step", step_);
  const std::string sig = layout_.signature();
  st.blobs.push_back(model::state_blob{"model/signature", std::vector<uint8_t>(sig.begin(), sig.end())});
  return st;
}

void fuyu_tiny::load_state(const model::model_state& st) {
  auto fail = [](const std::string& why) {
    throw std::invalid_argument("fuyu-tiny load_state: " + why);
  };
  const model::state_blob* sig = st.find_blob("model/signature");
  const std::string want = layout_.signature();
  if (!sig) fail("missing blob 'model/signature'");
  const std::string have(sig->bytes.begin(), sig->bytes.end());
  if (have != want) fail("checkpoint is of '" + have + "', this model is '" + want + "'");
  int64_t step = 0;
  if (!st.get_int64("optimizer/step", step)) fail("missing or mis-sized blob 'optimizer/step'");
  // Assemble everything on the host first so a bad checkpoint leaves the model untouched.
  const char* prefixes[] = {"param/", "adam_m/", "adam_v/"};
  std::vector<std::vector<float>> flat(3, std::vector<float>(params_.size()));
  for (size_t g = 0; g < 3; ++g)
    for (const auto& p : layout_.params) {
      const std::string name = prefixes[g] + p.name;
      const model::state_tensor* t = st.find_tensor(name);
      if (!t) fail("missing tensor '" + name + "'");
      if (static_cast<int64_t>(t->values.size()) != p.size)
        fail("tensor '" + name + "' has " + std::to_string(t->values.size()) +
             " values, expected " + std::to_string(p.size));
      std::memcpy(flat[g].data() + p.offset, t->values.data(), sizeof(float) * t->values.size());
    }
  ops_->upload(params_.get(), flat[0].data(), params_.bytes());
  ops_->upload(adam_m_.get(), flat[1].data(), adam_m_.bytes());
  ops_->upload(adam_v_.get(), flat[2].data(), adam_v_.bytes());
  step_ = step;
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
