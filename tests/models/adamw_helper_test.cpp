// model/adamw.hpp against the CPU kernels fuyu-tiny's optimizer was written with: the same
// global norm, clip coefficient and AdamW update, bit for bit, on any thread count; and the
// step's rules: gradient_scale before clipping, weight decay only where declared, a
// non-finite norm changing nothing.
#include "model/adamw.hpp"
#include "ops.hpp"

#include "core/rng.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace msomni;

namespace {

std::vector<float> random_values(size_t n, uint64_t seed, const char* purpose, float scale) {
  auto rng = rng_stream::derive(seed, purpose);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * rng.normal();
  return v;
}

// Tensors of sizes around the 4096-float chunks, one past the parallel threshold.
model::parameter_layout test_layout() {
  model::parameter_layout l;
  l.add("a.w", {70, 1000}, true);
  l.add("a.b", {4097}, false);
  l.add("c.w", {3, 5}, true);
  l.add("c.g", {1}, false);
  return l;
}

struct buffers {
  std::vector<float> p, g, m, v;
  int64_t step = 0;
  explicit buffers(const model::parameter_layout& l) {
    const auto n = static_cast<size_t>(l.total);
    p = random_values(n, 7, "p", 0.05f);
    m.assign(n, 0.0f);
    v.assign(n, 0.0f);
  }
};

// fuyu-tiny's step as it was written on the kernels: ops::sum_squares, kernels'
// clip_coefficient and ops::adamw_update per tensor.
model::optimizer_report kernel_step(kernels::ops& ops, const model::parameter_layout& l, const model::optimizer_settings& s,
                                    buffers& b) {
  model::optimizer_report r;
  r.grad_norm = std::sqrt(ops.sum_squares(b.g.data(), l.total)) * s.gradient_scale;
  if (!std::isfinite(r.grad_norm)) return r.skipped = true, r.step = b.step, r;
  r.clip_coefficient = kernels::clip_coefficient(r.grad_norm, s.grad_clip);
  r.step = ++b.step;
  for (const auto& p : l.params) {
    kernels::adamw_params a;
    a.lr = float(s.lr);
    a.beta1 = float(s.beta1);
    a.beta2 = float(s.beta2);
    a.eps = float(s.eps);
    a.weight_decay = p.weight_decay ? float(s.weight_decay) : 0.0f;
    a.grad_scale = float(s.gradient_scale * r.clip_coefficient);
    a.step = b.step;
    ops.adamw_update(b.g.data() + p.offset, p.size, a, b.p.data() + p.offset, b.m.data() + p.offset, b.v.data() + p.offset);
  }
  return r;
}

}  // namespace

TEST_CASE("adamw_step equals the CPU kernels' norm, clip and AdamW bit for bit, on 1 and 3 threads") {
  const auto layout = test_layout();
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    auto ops = kernels::make_cpu_ops(threads);
    buffers ours(layout), theirs(layout);
    model::optimizer_settings s;
    s.lr = 1e-2;
    s.weight_decay = 0.1;
    s.gradient_scale = 0.5;
    for (int k = 0; k < 4; ++k) {
      // Large gradients on even steps (clipped), small on odd ones (not).
      const auto g = random_values(static_cast<size_t>(layout.total), 11 + k, "g", k % 2 == 0 ? 1.0f : 1e-4f);
      ours.g = theirs.g = g;
      const auto a = model::adamw_step(layout, s, {ours.p, ours.g, ours.m, ours.v}, ours.step, threads);
      const auto b = kernel_step(*ops, layout, s, theirs);
      CHECK(a.grad_norm == b.grad_norm);
      CHECK(a.clip_coefficient == b.clip_coefficient);
      CHECK(a.step == b.step);
      CHECK((k % 2 == 0 ? a.clip_coefficient < 1 : a.clip_coefficient == 1));
      CHECK(ours.p == theirs.p);
      CHECK(ours.m == theirs.m);
      CHECK(ours.v == theirs.v);
    }
    CHECK(model::sum_of_squares(ours.p, threads) == ops->sum_squares(ours.p.data(), layout.total));
  }
}

TEST_CASE("adamw_step: gradient_scale comes before clipping, decay only where declared, a non-finite norm changes nothing") {
  model::parameter_layout l;
  l.add("w", {2}, true);
  l.add("b", {2}, false);
  std::vector<float> p{1, 1, 1, 1}, g{3, 4, 0, 0}, m(4, 0.0f), v(4, 0.0f);
  int64_t step = 0;
  model::optimizer_settings s;
  s.lr = 0.1;
  s.weight_decay = 0.5;
  s.grad_clip = 10;
  s.gradient_scale = 0.5;
  auto r = model::adamw_step(l, s, {p, g, m, v}, step);
  CHECK(r.grad_norm == doctest::Approx(2.5));  // |(3, 4)| = 5, times 0.5
  CHECK(r.clip_coefficient == 1);
  CHECK(r.step == 1);
  CHECK(step == 1);
  // b has no gradient: only w's decay could move it, and b is not decayed.
  CHECK(p[2] == 1.0f);
  CHECK(p[3] == 1.0f);
  CHECK(p[0] < 1.0f);

  const auto before = p;
  g[1] = std::numeric_limits<float>::quiet_NaN();
  r = model::adamw_step(l, s, {p, g, m, v}, step);
  CHECK(r.skipped);
  CHECK(r.step == 1);
  CHECK(step == 1);
  CHECK(p == before);
  g[1] = std::numeric_limits<float>::infinity();
  CHECK(model::adamw_step(l, s, {p, g, m, v}, step).skipped);
  CHECK(p == before);

  std::vector<float> short_buffer(3);
  CHECK_THROWS_WITH_AS(model::adamw_step(l, s, {short_buffer, g, m, v}, step), doctest::Contains("the layout has 4"),
                       std::invalid_argument);
}

TEST_CASE("clip_coefficient: off at max_norm <= 0, 1 at or under the bound, just under it above") {
  CHECK(model::clip_coefficient(5.0, 0.0) == 1.0f);
  CHECK(model::clip_coefficient(5.0, 5.0) == 1.0f);
  CHECK(model::clip_coefficient(2.0, 5.0) == 1.0f);
  CHECK(model::clip_coefficient(10.0, 5.0) == kernels::clip_coefficient(10.0, 5.0));
  CHECK(10.0 * model::clip_coefficient(10.0, 5.0) < 5.0);
}
