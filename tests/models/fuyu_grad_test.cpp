// Whole-model gradient of fuyu-tiny against finite differences: for every parameter tensor,
// the directional derivative along a random +-1 direction restricted to that tensor. The
// batch mixes an image, a video and a text-only sample so every embedding path is covered.
#include "fuyu_tiny/fuyu_tiny.hpp"
#include "square_batches.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace msomni;

TEST_CASE("fuyu-tiny gradient matches finite differences for every parameter tensor") {
  config::model_section cfg;
  cfg.d_model = 16;
  cfg.n_layers = 2;
  cfg.n_heads = 2;
  cfg.d_ff = 32;
  cfg.image_size = 8;
  cfg.patch_size = 4;
  cfg.video_frames = 2;
  cfg.max_seq_len = 24;
  model::model_context ctx{cfg, 7, model::compute_device::cpu, 0, 2};
  models::fuyu_tiny m(ctx);
  // Larger-than-init weights so every nonlinearity is away from its linear regime and
  // gradients are far above float noise.
  auto rng = rng_stream::derive(7, "test.grad.params");
  std::vector<float> params(static_cast<size_t>(m.parameter_count()));
  for (auto& p : params) p = 0.2f * rng.normal();
  for (const auto& info : m.parameters())
    if (info.name.size() > 2 && info.name.substr(info.name.size() - 2) == ".g")
      for (int64_t i = 0; i < info.size; ++i) params[info.offset + i] += 1.0f;
  m.copy_from_host(model::buffer_role::parameters, params);

  test::square_batches data(cfg, 3, 10, 7);
  const auto batch = data.next();
  REQUIRE(batch.modalities[0] == modality::image);
  REQUIRE(batch.modalities[1] == modality::video);
  REQUIRE(batch.modalities[2] == modality::text);
  m.zero_gradients();
  const auto report = m.forward_backward(batch, 1.0f);
  CHECK(report.target_tokens == batch.target_tokens());
  CHECK(report.loss == doctest::Approx(m.evaluate(batch).loss).epsilon(1e-12));
  std::vector<float> grads(params.size());
  m.copy_to_host(model::buffer_role::gradients, grads);

  const double eps = 2e-3;
  for (const auto& info : m.parameters()) {
    auto dir_rng = rng_stream::derive(7, "test.grad.dir." + info.name);
    std::vector<float> dir(static_cast<size_t>(info.size));
    double analytic = 0;
    for (int64_t i = 0; i < info.size; ++i) {
      dir[i] = (dir_rng.next() & 1) ? 1.0f : -1.0f;
      analytic += double(grads[info.offset + i]) * dir[i];
    }
    auto loss_at = [&](double t) {
      auto moved = params;
      for (int64_t i = 0; i < info.size; ++i) moved[info.offset + i] += float(t) * dir[i];
      m.copy_from_host(model::buffer_role::parameters, moved);
      return m.evaluate(batch).loss;
    };
    const double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps);
    INFO(info.name << ": analytic " << analytic << " numeric " << numeric);
    // Observed agreement is ~1e-4 relative; a wrong backward term is off by far more.
    CHECK(std::abs(analytic - numeric) <= 2e-4 + 2e-3 * std::abs(numeric));
  }
  m.copy_from_host(model::buffer_role::parameters, params);
}

TEST_CASE("fuyu-tiny gradients accumulate and scale with grad_scale") {
  const auto cfg = test::tiny_model_config();
  model::model_context ctx{cfg, 3, model::compute_device::cpu, 0, 2};
  models::fuyu_tiny m(ctx);
  test::square_batches data(cfg, 3, 24, 3);
  const auto batch = data.next();
  const size_t n = static_cast<size_t>(m.parameter_count());
  std::vector<float> once(n), twice(n), half(n);
  m.zero_gradients();
  m.forward_backward(batch, 1.0f);
  m.copy_to_host(model::buffer_role::gradients, once);
  m.forward_backward(batch, 1.0f);
  m.copy_to_host(model::buffer_role::gradients, twice);
  m.zero_gradients();
  m.forward_backward(batch, 0.5f);
  m.copy_to_host(model::buffer_role::gradients, half);
  // Not bit-exact: GEMM's beta = 1 accumulation rounds differently from one product.
  double norm = 0, err_twice = 0, err_half = 0;
  for (size_t i = 0; i < n; ++i) {
    norm += double(once[i]) * once[i];
    err_twice += std::pow(double(twice[i]) - 2.0 * once[i], 2);
    err_half += std::pow(double(half[i]) - 0.5 * once[i], 2);
  }
  REQUIRE(norm > 0);
  CHECK(std::sqrt(err_twice / (4 * norm)) < 1e-5);
  CHECK(std::sqrt(err_half / (0.25 * norm)) < 1e-5);
}

// A sample's rows are its own patches and text, whatever the others in its micro-batch hold:
// a mixed batch (image, video, text-only) gives the loss and gradients of its samples run one
// by one, each without any padding. A wrong row or attention offset of any sample breaks it.
TEST_CASE("fuyu-tiny: a mixed micro-batch equals its samples run alone, unpadded") {
  const auto cfg = test::tiny_model_config();
  model::model_context ctx{cfg, 5, model::compute_device::cpu, 0, 2};
  models::fuyu_tiny m(ctx);
  test::square_batches data(cfg, 3, 24, 5);
  const auto batch = data.next();
  REQUIRE(batch.modalities[0] == modality::image);
  REQUIRE(batch.modalities[1] == modality::video);
  REQUIRE(batch.modalities[2] == modality::text);
  const size_t n = static_cast<size_t>(m.parameter_count());
  std::vector<float> whole(n), parts(n);
  m.zero_gradients();
  const auto all = m.forward_backward(batch, 1.0f);
  m.copy_to_host(model::buffer_role::gradients, whole);

  m.zero_gradients();
  double loss_sum = 0;
  int64_t targets = 0;
  for (int64_t b = 0; b < batch.batch; ++b) {
    const auto c = batch.patch_counts[static_cast<size_t>(b)];
    model::micro_batch one;
    one.batch = 1;
    one.max_patches = c;
    one.patch_dim = batch.patch_dim;
    one.text_len = batch.text_len;
    const auto from = batch.patches.begin() + b * batch.max_patches * batch.patch_dim;
    one.patches.assign(from, from + c * batch.patch_dim);
    one.patch_counts = {c};
    const auto t0 = static_cast<std::ptrdiff_t>(b * batch.text_len), t1 = t0 + batch.text_len;
    one.tokens.assign(batch.tokens.begin() + t0, batch.tokens.begin() + t1);
    one.loss_mask.assign(batch.loss_mask.begin() + t0, batch.loss_mask.begin() + t1);
    one.modalities = {batch.modalities[static_cast<size_t>(b)]};
    const auto count = one.target_tokens();
    const auto r = m.forward_backward(one, static_cast<float>(count) / static_cast<float>(all.target_tokens));
    loss_sum += r.loss * static_cast<double>(r.target_tokens);
    targets += r.target_tokens;
  }
  m.copy_to_host(model::buffer_role::gradients, parts);
  CHECK(targets == all.target_tokens);
  CHECK(loss_sum / static_cast<double>(targets) == doctest::Approx(all.loss).epsilon(1e-6));
  double norm = 0, err = 0;
  for (size_t i = 0; i < n; ++i) {
    norm += double(whole[i]) * whole[i];
    err += std::pow(double(parts[i]) - whole[i], 2);
  }
  REQUIRE(norm > 0);
  CHECK(std::sqrt(err / norm) < 1e-5);  // summation order only
}
