// PCA by the eigenvectors of the standardised covariance (LAPACK dsyev, shipped in OpenBLAS).
#include "memory_pca.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

extern "C" void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                       double* work, const int* lwork, int* info);

namespace msomni::predict {

void pca_basis::project(std::span<const double> x, std::span<double> out) const {
  for (size_t c = 0; c < dims_out; ++c) {
    double v = 0;
    const double* row = components.data() + c * dims_in;
    for (size_t j = 0; j < dims_in; ++j) v += row[j] * (x[j] - mean[j]) / scale[j];
    out[c] = v;
  }
}

pca_transfer pca_transfer_between(const pca_basis& from, const pca_basis& to) {
  if (from.dims_in != to.dims_in) throw std::invalid_argument("pca_transfer_between: different inputs");
  // x = mean_to + scale_to * (to^T z_to): substitute into from's projection.
  const size_t d = from.dims_in, a_n = from.dims_out, b_n = to.dims_out;
  pca_transfer t;
  t.m.assign(a_n * b_n, 0.0);
  t.shift.assign(a_n, 0.0);
  for (size_t a = 0; a < a_n; ++a)
    for (size_t j = 0; j < d; ++j) {
      const double pa = from.components[a * d + j] / from.scale[j];
      t.shift[a] += pa * (to.mean[j] - from.mean[j]);
      for (size_t b = 0; b < b_n; ++b) t.m[a * b_n + b] += pa * to.scale[j] * to.components[b * d + j];
    }
  return t;
}

pca_basis pca_fit(std::span<const double> rows, size_t d, size_t k) {
  if (d == 0 || rows.size() % d != 0) throw std::invalid_argument("pca_fit: rows are not n x d");
  const size_t n = rows.size() / d;
  pca_basis p;
  p.dims_in = d;
  p.mean.assign(d, 0.0);
  p.scale.assign(d, 1.0);
  if (n < 2) throw std::invalid_argument("pca_fit: needs at least 2 rows");
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < d; ++j) p.mean[j] += rows[i * d + j];
  for (auto& m : p.mean) m /= static_cast<double>(n);
  for (size_t j = 0; j < d; ++j) {
    double var = 0;
    for (size_t i = 0; i < n; ++i) var += (rows[i * d + j] - p.mean[j]) * (rows[i * d + j] - p.mean[j]);
    const double sd = std::sqrt(var / static_cast<double>(n - 1));
    p.scale[j] = sd > 1e-12 * std::max(1.0, std::abs(p.mean[j])) ? sd : 1.0;
  }
  // Column-major and row-major agree for a symmetric matrix.
  std::vector<double> cov(d * d, 0.0), z(d);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < d; ++j) z[j] = (rows[i * d + j] - p.mean[j]) / p.scale[j];
    for (size_t a = 0; a < d; ++a)
      for (size_t b = 0; b <= a; ++b) cov[a * d + b] += z[a] * z[b];
  }
  for (size_t a = 0; a < d; ++a)
    for (size_t b = 0; b <= a; ++b) cov[b * d + a] = cov[a * d + b] /= static_cast<double>(n - 1);
  const int dn = static_cast<int>(d);
  int info = 0, lwork = -1;
  std::vector<double> w(d);
  double query = 0;
  dsyev_("V", "U", &dn, cov.data(), &dn, w.data(), &query, &lwork, &info);
  lwork = std::max(1, static_cast<int>(query));
  std::vector<double> work(static_cast<size_t>(lwork));
  dsyev_("V", "U", &dn, cov.data(), &dn, w.data(), work.data(), &lwork, &info);
  if (info != 0) throw std::runtime_error("pca_fit: dsyev failed (info " + std::to_string(info) + ")");
  // Eigenvalues ascend; column j of cov (column-major) is eigenvector j.
  p.dims_out = std::min(k, d);
  p.components.assign(p.dims_out * d, 0.0);
  for (size_t c = 0; c < p.dims_out; ++c) {
    const size_t src = d - 1 - c;
    const double* v = cov.data() + src * d;
    size_t largest = 0;
    for (size_t j = 1; j < d; ++j)
      if (std::abs(v[j]) > std::abs(v[largest]) + 1e-12) largest = j;
    const double sign = v[largest] < 0 ? -1.0 : 1.0;
    for (size_t j = 0; j < d; ++j) p.components[c * d + j] = sign * v[j];
    p.variances.push_back(std::max(0.0, w[src]));
  }
  for (double e : w) p.total_variance += std::max(0.0, e);
  return p;
}

}  // namespace msomni::predict
