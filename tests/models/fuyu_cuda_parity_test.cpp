// fuyu-tiny on CUDA against the CPU reference: the same seed and batch through a full
// training step (forward, backward, clip, AdamW) on both backends, then a few more steps.
// Per-tensor tolerances: gradients to 1e-4 relative L2; parameters after the step to a
// bound that allows AdamW's first step (an update of +-lr per element) to flip where a
// gradient is essentially zero. Skipped loudly without a usable GPU.
#include "fuyu_tiny/fuyu_tiny.hpp"
#include "kernel_test_support.hpp"
#include "square_batches.hpp"

using namespace msomni;

namespace {

std::vector<float> slice(const std::vector<float>& v, const model::parameter_info& p) {
  return std::vector<float>(v.begin() + p.offset, v.begin() + p.offset + p.size);
}

}  // namespace

TEST_CASE("parity: fuyu-tiny training step on CUDA matches the CPU reference") {
  const auto report = kernels::probe_devices();
  if (!test::gpu_or_skip("fuyu-tiny training step")) return;
  const auto cfg = test::tiny_model_config();
  models::fuyu_tiny cpu(model::model_context{cfg, 17, model::compute_device::cpu, 0, 2});
  models::fuyu_tiny gpu(model::model_context{cfg, 17, model::compute_device::cuda,
                                             report.gpus.front().index, 0});
  REQUIRE(gpu.storage() == model::storage_kind::cuda_device);
  test::square_batches data(cfg, 6, 24, 17);
  const auto batch = data.next();
  model::optimizer_settings opt;
  opt.lr = 1e-3;

  const size_t n = size_t(cpu.parameter_count());
  std::vector<float> p_cpu(n), p_gpu(n), g_cpu(n), g_gpu(n);
  cpu.copy_to_host(model::buffer_role::parameters, p_cpu);
  gpu.copy_to_host(model::buffer_role::parameters, p_gpu);
  CHECK(p_cpu == p_gpu);  // initialisation is host-side and seed-determined

  cpu.zero_gradients();
  gpu.zero_gradients();
  const auto l_cpu = cpu.forward_backward(batch, 1.0f);
  const auto l_gpu = gpu.forward_backward(batch, 1.0f);
  MESSAGE("loss cpu " << l_cpu.loss << " gpu " << l_gpu.loss);
  CHECK(l_gpu.loss == doctest::Approx(l_cpu.loss).epsilon(1e-5));
  cpu.copy_to_host(model::buffer_role::gradients, g_cpu);
  gpu.copy_to_host(model::buffer_role::gradients, g_gpu);
  for (const auto& p : cpu.parameters()) {
    const auto err = test::compare(slice(g_gpu, p), slice(g_cpu, p));
    MESSAGE("grad " << p.name << ": rel_l2 " << err.rel_l2 << " max_abs " << err.max_abs);
    CHECK_MESSAGE(err.rel_l2 <= 1e-4, "grad " << p.name << " rel_l2 " << err.rel_l2);
  }

  const auto s_cpu = cpu.optimizer_step(opt);
  const auto s_gpu = gpu.optimizer_step(opt);
  CHECK(s_gpu.grad_norm == doctest::Approx(s_cpu.grad_norm).epsilon(1e-5));
  cpu.copy_to_host(model::buffer_role::parameters, p_cpu);
  gpu.copy_to_host(model::buffer_role::parameters, p_gpu);
  for (const auto& p : cpu.parameters()) {
    const auto a = slice(p_gpu, p), b = slice(p_cpu, p);
    size_t flips = 0;
    for (size_t i = 0; i < a.size(); ++i) flips += std::abs(a[i] - b[i]) > 0.1 * opt.lr;
    const auto err = test::compare(a, b);
    MESSAGE("param " << p.name << ": max_abs " << err.max_abs << " flips " << flips);
    CHECK(err.max_abs <= 2.2 * opt.lr);           // never more than a sign flip of one step
    CHECK(flips <= 1 + a.size() / 100);           // and that only where the gradient is ~0
  }

  // A few more steps: the trajectories stay together.
  for (int s = 0; s < 3; ++s) {
    const auto mb = data.next();
    cpu.zero_gradients();
    gpu.zero_gradients();
    const double a = cpu.forward_backward(mb, 1.0f).loss;
    const double b = gpu.forward_backward(mb, 1.0f).loss;
    cpu.optimizer_step(opt);
    gpu.optimizer_step(opt);
    MESSAGE("step " << s + 2 << " loss cpu " << a << " gpu " << b);
    CHECK(b == doctest::Approx(a).epsilon(1e-3));
  }
}

TEST_CASE("parity: fuyu-tiny on CUDA is deterministic run to run") {
  const auto report = kernels::probe_devices();
  if (!test::gpu_or_skip("fuyu-tiny CUDA determinism")) return;
  const auto cfg = test::tiny_model_config();
  auto run = [&] {
    models::fuyu_tiny m(model::model_context{cfg, 23, model::compute_device::cuda,
                                             report.gpus.front().index, 0});
    test::square_batches data(cfg, 4, 24, 23);
    std::vector<double> losses;
    for (int s = 0; s < 10; ++s) {
      m.zero_gradients();
      losses.push_back(m.forward_backward(data.next(), 1.0f).loss);
      m.optimizer_step(model::optimizer_settings{});
    }
    return losses;
  };
  CHECK(run() == run());
}
