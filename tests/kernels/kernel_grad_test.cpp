// Every CPU op's backward against central finite differences of its forward. The scalar
// loss is sum(y * r) for a fixed random r, so d_y = r; losses are accumulated in double.
#include "kernel_test_support.hpp"

#include <algorithm>

using namespace msomni;
using test::check_gradient;
using test::random_vector;
using test::weighted_sum;

namespace {

std::unique_ptr<kernels::ops> cpu() { return kernels::make_cpu_ops(2); }

}  // namespace

TEST_CASE("linear backward matches finite differences") {
  auto o = cpu();
  const int64_t rows = 5, in = 7, out = 6;
  auto x = random_vector(rows * in, 1, "x");
  auto w = random_vector(in * out, 1, "w");
  auto b = random_vector(out, 1, "b");
  const auto r = random_vector(rows * out, 1, "r");
  std::vector<float> y(rows * out);
  auto loss = [&] {
    o->linear_forward(x.data(), w.data(), b.data(), rows, in, out, y.data());
    return weighted_sum(y, r);
  };
  std::vector<float> dx(x.size()), dw(w.size(), 0), db(b.size(), 0);
  o->linear_backward(r.data(), x.data(), w.data(), rows, in, out, dx.data(), dw.data(), db.data());
  check_gradient("d_x", x, dx, loss);
  check_gradient("d_w", w, dw, loss);
  check_gradient("d_bias", b, db, loss);
  // Parameter gradients accumulate: a second backward doubles them.
  auto dw2 = dw;
  o->linear_backward(r.data(), x.data(), w.data(), rows, in, out, nullptr, dw2.data(), nullptr);
  for (size_t i = 0; i < dw.size(); ++i) CHECK(dw2[i] == doctest::Approx(2 * dw[i]));
}

TEST_CASE("patch embedding backward matches finite differences, absent patches ignored") {
  auto o = cpu();
  const int64_t batch = 3, max_p = 4, pd = 5, seq = 7, dim = 6;
  const std::vector<int32_t> counts = {4, 0, 2};
  auto patches = random_vector(batch * max_p * pd, 2, "patches");
  auto w = random_vector(pd * dim, 2, "w");
  auto b = random_vector(dim, 2, "b");
  const auto r = random_vector(batch * seq * dim, 2, "r");
  std::vector<float> x(batch * seq * dim);
  auto loss = [&] {
    std::fill(x.begin(), x.end(), 0.0f);
    o->patch_embed_forward(patches.data(), w.data(), b.data(), counts.data(), batch, max_p, pd,
                           seq, dim, x.data());
    return weighted_sum(x, r);
  };
  std::vector<float> dw(w.size(), 0), db(b.size(), 0);
  o->patch_embed_backward(patches.data(), r.data(), counts.data(), batch, max_p, pd, seq, dim,
                          dw.data(), db.data());
  check_gradient("d_w", w, dw, loss);
  check_gradient("d_bias", b, db, loss);
  // Rows past a sample's count are text positions: the op must not write them.
  loss();
  for (int64_t d = 0; d < dim; ++d) CHECK(x[(1 * seq + 0) * dim + d] == 0.0f);
  for (int64_t d = 0; d < dim; ++d) CHECK(x[(2 * seq + 2) * dim + d] == 0.0f);
}

TEST_CASE("token and position embedding backward match finite differences") {
  auto o = cpu();
  const int64_t batch = 2, text = 5, seq = 8, dim = 4, vocab = 6;
  const std::vector<int32_t> tokens = {1, 3, 3, 5, 0, 2, 2, 2, 4, 1};  // repeats accumulate
  const std::vector<int32_t> offsets = {3, 0};
  auto table = random_vector(vocab * dim, 3, "table");
  auto pos = random_vector(seq * dim, 3, "pos");
  const auto r = random_vector(batch * seq * dim, 3, "r");
  std::vector<float> x(batch * seq * dim);
  auto loss = [&] {
    std::fill(x.begin(), x.end(), 0.0f);
    o->token_embed_forward(tokens.data(), offsets.data(), table.data(), batch, text, seq, dim,
                           x.data());
    o->position_embed_forward(pos.data(), batch, seq, dim, x.data());
    return weighted_sum(x, r);
  };
  std::vector<float> dtable(table.size(), 0), dpos(pos.size(), 0);
  o->token_embed_backward(tokens.data(), offsets.data(), r.data(), batch, text, seq, dim, vocab,
                          dtable.data());
  o->position_embed_backward(r.data(), batch, seq, dim, dpos.data());
  check_gradient("d_table", table, dtable, loss);
  check_gradient("d_pos", pos, dpos, loss);
  loss();
  CHECK(x[(0 * seq + 3) * dim] == doctest::Approx(table[1 * dim] + pos[3 * dim]));
}

TEST_CASE("layer norm backward matches finite differences") {
  auto o = cpu();
  const int64_t rows = 4, dim = 9;
  auto x = random_vector(rows * dim, 4, "x", 2.0f);
  for (auto& v : x) v += 3.0f;  // a mean far from zero exercises the two-pass variance
  auto g = random_vector(dim, 4, "g");
  auto b = random_vector(dim, 4, "b");
  const auto r = random_vector(rows * dim, 4, "r");
  std::vector<float> y(rows * dim), mean(rows), rstd(rows);
  auto loss = [&] {
    o->layer_norm_forward(x.data(), g.data(), b.data(), rows, dim, 1e-5f, y.data(), mean.data(),
                          rstd.data());
    return weighted_sum(y, r);
  };
  loss();
  std::vector<float> dx(x.size(), 0), dg(dim, 0), db(dim, 0);
  o->layer_norm_backward(r.data(), x.data(), g.data(), mean.data(), rstd.data(), rows, dim,
                         dx.data(), dg.data(), db.data());
  test::fd_options fd;
  fd.eps = 1e-3;
  check_gradient("d_x", x, dx, loss, fd);
  check_gradient("d_gamma", g, dg, loss, fd);
  check_gradient("d_beta", b, db, loss, fd);
}

TEST_CASE("causal attention backward matches finite differences and is causal") {
  auto o = cpu();
  const int64_t batch = 2, seq = 5, heads = 2, hd = 3, dim = heads * hd;
  auto qkv = random_vector(batch * seq * 3 * dim, 5, "qkv");
  const auto r = random_vector(batch * seq * dim, 5, "r");
  std::vector<float> probs(batch * heads * seq * seq), out(batch * seq * dim);
  auto loss = [&] {
    o->attention_forward(qkv.data(), batch, seq, heads, hd, probs.data(), out.data());
    return weighted_sum(out, r);
  };
  loss();
  for (int64_t i = 0; i < seq; ++i) {
    double row = 0;
    for (int64_t j = 0; j < seq; ++j) {
      const float p = probs[i * seq + j];
      if (j > i) CHECK(p == 0.0f);
      row += p;
    }
    CHECK(row == doctest::Approx(1.0));
  }
  std::vector<float> dqkv(qkv.size()), dscores(probs.size());
  o->attention_backward(r.data(), qkv.data(), probs.data(), batch, seq, heads, hd, dscores.data(),
                        dqkv.data());
  test::fd_options fd;
  fd.eps = 1e-3;
  fd.max_coords = 200;
  check_gradient("d_qkv", qkv, dqkv, loss, fd);
  // Changing the last position's key/value must not change any earlier output.
  auto before = out;
  qkv[(0 * seq + seq - 1) * 3 * dim + dim] += 5.0f;
  loss();
  for (int64_t i = 0; i < (seq - 1) * dim; ++i) CHECK(out[i] == before[i]);
}

TEST_CASE("GELU backward matches finite differences and residual add sums") {
  auto o = cpu();
  auto x = random_vector(40, 6, "x", 2.0f);
  const auto r = random_vector(40, 6, "r");
  std::vector<float> y(40);
  auto loss = [&] {
    o->gelu_forward(x.data(), 40, y.data());
    return weighted_sum(y, r);
  };
  std::vector<float> dx(40);
  o->gelu_backward(x.data(), r.data(), 40, dx.data());
  test::fd_options fd;
  fd.eps = 1e-3;
  check_gradient("d_x", x, dx, loss, fd);
  CHECK(y.size() == 40);
  o->gelu_forward(x.data(), 40, y.data());
  CHECK(y[0] == doctest::Approx(0.5 * x[0] * (1 + std::erf(x[0] / std::sqrt(2.0)))).epsilon(2e-3));

  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, s(3);
  o->add(a.data(), b.data(), 3, s.data());
  CHECK(s == std::vector<float>{11, 22, 33});
  o->accumulate(a.data(), 3, s.data());
  CHECK(s == std::vector<float>{12, 24, 36});
  o->scale(0.5f, 3, s.data());
  CHECK(s == std::vector<float>{6, 12, 18});
}

TEST_CASE("masked cross-entropy gradient matches finite differences") {
  auto o = cpu();
  const int64_t rows = 5, vocab = 7;
  auto logits = random_vector(rows * vocab, 7, "logits", 2.0f);
  const std::vector<int32_t> targets = {3, 0, 6, 1, 2};
  const std::vector<float> mask = {1, 0, 1, 1, 0};
  std::vector<float> scratch(logits.size());
  auto loss = [&] {
    return o->cross_entropy(logits.data(), targets.data(), mask.data(), rows, vocab, 1.0f,
                            scratch.data());
  };
  std::vector<float> d(logits.size());
  const double total = o->cross_entropy(logits.data(), targets.data(), mask.data(), rows, vocab,
                                        1.0f, d.data());
  // Reference in double for the masked rows only.
  double ref = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (mask[r] == 0) continue;
    double mx = -1e300, sum = 0;
    for (int64_t c = 0; c < vocab; ++c) mx = std::max(mx, double(logits[r * vocab + c]));
    for (int64_t c = 0; c < vocab; ++c) sum += std::exp(logits[r * vocab + c] - mx);
    ref += std::log(sum) + mx - logits[r * vocab + targets[r]];
  }
  CHECK(total == doctest::Approx(ref).epsilon(1e-6));
  test::fd_options fd;
  fd.eps = 1e-3;
  fd.max_coords = 100;
  check_gradient("d_logits", logits, d, loss, fd);
  for (int64_t c = 0; c < vocab; ++c) CHECK(d[1 * vocab + c] == 0.0f);  // masked row
  // In place (d_logits aliasing logits) gives the same gradient.
  auto inplace = logits;
  o->cross_entropy(inplace.data(), targets.data(), mask.data(), rows, vocab, 1.0f, inplace.data());
  CHECK(inplace == d);
  std::vector<int32_t> bad = targets;
  bad[0] = 99;
  CHECK_THROWS_WITH_AS(o->cross_entropy(logits.data(), bad.data(), mask.data(), rows, vocab, 1.0f,
                                        scratch.data()),
                       doctest::Contains("row 0 has target 99"), std::invalid_argument);
}
