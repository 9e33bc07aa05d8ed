// Ridge regression and PCA: each recovers what a known construction put in.
#include "memory_pca.hpp"
#include "memory_ridge.hpp"
#include "sawtooth_trace.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace msomni::predict;

TEST_CASE("ridge recovers exact linear coefficients and drops a constant column") {
  // y = 3 + 2 x0 - 0.5 x1 + 0 * x2 with x2 constant.
  std::vector<double> rows, y;
  for (int i = 0; i < 40; ++i) {
    const double x0 = std::sin(i * 0.7) * 5, x1 = (i % 7) * 1.5 - 2, x2 = 4;
    rows.insert(rows.end(), {x0, x1, x2});
    y.push_back(3 + 2 * x0 - 0.5 * x1);
  }
  const auto m = ridge_fit(rows, y, 3, 1e-12);
  REQUIRE(m.fitted);
  CHECK(m.coef[2] == 0);
  for (const auto& x : {std::vector<double>{1, 1, 4}, std::vector<double>{-3, 10, 4}, std::vector<double>{0, 0, 4}})
    CHECK(m.predict(x) == doctest::Approx(3 + 2 * x[0] - 0.5 * x[1]).epsilon(1e-8));
  // A strong penalty pulls the fit to the mean.
  const auto shrunk = ridge_fit(rows, y, 3, 1e6);
  double mean = 0;
  for (double v : y) mean += v / static_cast<double>(y.size());
  CHECK(shrunk.predict(std::vector<double>{5, -2, 4}) == doctest::Approx(mean).epsilon(1e-3));
}

TEST_CASE("cholesky refuses a matrix that is not positive definite") {
  std::vector<double> a{1, 2, 2, 1}, b{1, 1};
  CHECK_FALSE(cholesky_solve(a, b, 2));
  std::vector<double> good{4, 2, 2, 3}, rhs{2, 1};
  REQUIRE(cholesky_solve(good, rhs, 2));
  CHECK(rhs[0] == doctest::Approx(0.5));
  CHECK(rhs[1] == doctest::Approx(0.0));
}

TEST_CASE("the ridge predictor fits peaks to batch features on a saw tooth") {
  ridge_predictor p(200);
  const auto trace = msomni::testing::sawtooth_trace(120);
  for (const auto& s : trace) p.observe(s);
  // The peaks follow tokens and tokens x S exactly, up to a wobble below 64 MiB.
  const auto next = msomni::testing::sawtooth_batch(500);
  const double truth = static_cast<double>(msomni::testing::sawtooth_peak_bytes(next, 0));
  const std::vector<batch_features> up{next};
  const auto f = p.forecast(3, up);
  CHECK(std::abs(f.peak_bytes[0] - truth) < 64.0 * (1 << 20));
  // The unknown steps get the window's largest fitted batch (the video one).
  CHECK(f.peak_bytes[2] >= f.peak_bytes[0]);
  CHECK(f.peak_bytes[2] > 16.0 * (1 << 30));
}

TEST_CASE("pca recovers a known principal axis") {
  std::vector<double> rows;
  for (int i = 0; i < 200; ++i) {
    const double t = std::sin(i * 0.37) * 10, e = std::cos(i * 1.3) * 0.01, z = std::sin(i * 2.1 + 1);
    rows.insert(rows.end(), {t + e, t - e, z});
  }
  const auto p = pca_fit(rows, 3, 2);
  REQUIRE(p.dims_out == 2);
  const double r2 = 1 / std::sqrt(2.0);
  CHECK(p.components[0] == doctest::Approx(r2).epsilon(1e-4));
  CHECK(p.components[1] == doctest::Approx(r2).epsilon(1e-4));
  CHECK(std::abs(p.components[2]) < 1e-2);  // the samples of z and t are not exactly uncorrelated
  // Second: the independent third column.
  CHECK(std::abs(p.components[3 + 2]) == doctest::Approx(1).epsilon(1e-4));
  CHECK(p.variances[0] == doctest::Approx(2).epsilon(1e-3));
  CHECK(p.total_variance == doctest::Approx(3).epsilon(1e-9));
  // Projection of a point on the axis.
  std::vector<double> out(2);
  const std::vector<double> x{p.mean[0] + p.scale[0], p.mean[1] + p.scale[1], p.mean[2]};
  p.project(x, out);
  CHECK(out[0] == doctest::Approx(std::sqrt(2.0)).epsilon(1e-3));
  // More components than columns: keeps them all.
  CHECK(pca_fit(rows, 3, 16).dims_out == 3);
}

TEST_CASE("a pca transfer reads one basis's coordinates from another's") {
  std::vector<double> a, b;
  for (int i = 0; i < 60; ++i) {
    const double u = std::sin(i * 0.61), v = std::cos(i * 0.23), w = std::sin(i * 1.7 + 0.4);
    a.insert(a.end(), {u, 2 * u + v, w, u - w + 3});
    b.insert(b.end(), {5 * v + 1, u * w, -w, 0.1 * u});  // other data, other mean and scale
  }
  const auto from = pca_fit(a, 4, 4), to = pca_fit(b, 4, 4);
  const auto t = pca_transfer_between(from, to);
  for (const auto& x : {std::vector<double>{0.3, -1, 2, 7}, std::vector<double>{10, 0, 0, -4}}) {
    std::vector<double> zf(4), zt(4);
    from.project(x, zf);
    to.project(x, zt);
    for (size_t r = 0; r < 4; ++r) {
      double v = t.shift[r];
      for (size_t c = 0; c < 4; ++c) v += t.m[r * 4 + c] * zt[c];
      CHECK(v == doctest::Approx(zf[r]).epsilon(1e-9));
    }
  }
}
