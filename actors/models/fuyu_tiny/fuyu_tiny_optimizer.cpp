// fuyu-tiny's optimizer step: msomni's AdamW with global-norm clipping (model/adamw.hpp).
// On the CPU the helper runs on the buffers themselves (host memory); on CUDA the same step
// drives the backend's norm and update kernels. This file is compiled like the CPU kernels
// (-O3, no trapping math, no errno), which lets the element loop vectorise without changing
// a value.
#include "fuyu_tiny/fuyu_tiny.hpp"

#include "model/adamw.hpp"

namespace msomni::models {

model::optimizer_report fuyu_tiny::optimizer_step(const model::optimizer_settings& s) {
  if (ops_->kind() == kernels::backend_kind::cpu)
    return model::adamw_step(layout_, s, {parameter_data(), gradient_data(), {adam_m_.get(), adam_m_.size()},
                                          {adam_v_.get(), adam_v_.size()}},
                             step_, host_threads_);
  const double sum = ops_->sum_squares(grads_.get(), static_cast<int64_t>(grads_.size()));
  return model::adamw_step_with(layout_, s, sum, step_,
                                [this](const model::parameter_info& p, const model::adamw_tensor_update& u) {
                                  kernels::adamw_params a;
                                  a.lr = u.lr;
                                  a.beta1 = u.beta1;
                                  a.beta2 = u.beta2;
                                  a.eps = u.eps;
                                  a.weight_decay = u.weight_decay;
                                  a.grad_scale = u.grad_scale;
                                  a.step = u.step;
                                  ops_->adamw_update(grads_.get() + p.offset, p.size, a, params_.get() + p.offset,
                                                     adam_m_.get() + p.offset, adam_v_.get() + p.offset);
                                });
}

}  // namespace msomni::models
