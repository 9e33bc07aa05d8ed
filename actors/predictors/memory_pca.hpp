// Principal components of a set of rows: standardise each column, take the covariance's
// leading eigenvectors (LAPACK dsyev from OpenBLAS) and project onto them. Signs are
// fixed (each component's largest entry positive) so a refit on similar data gives the
// same basis.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace msomni::predict {

struct pca_basis {
  size_t dims_in = 0, dims_out = 0;
  std::vector<double> mean, scale;       // per input column; scale 1 for a constant column
  std::vector<double> components;        // dims_out x dims_in, row-major, orthonormal rows
  std::vector<double> variances;         // per component, largest first
  double total_variance = 0;             // of the standardised columns
  bool fitted() const { return dims_out > 0; }
  // out = components * ((x - mean) / scale); out has dims_out entries.
  void project(std::span<const double> x, std::span<double> out) const;
};

// How to read one basis's coordinates from another's: for a row x,
//   from.project(x) = m * to.project(x) + shift   (m: from.dims_out x to.dims_out, row-major)
// exactly when `to` keeps every dimension of the standardised data, else for the part of
// x in to's span. A model fed from.project(x) keeps its outputs on to.project(x) when its
// input weights W become W m and its bias takes W shift.
struct pca_transfer {
  std::vector<double> m, shift;
};
pca_transfer pca_transfer_between(const pca_basis& from, const pca_basis& to);

// rows: n x d, row-major; keeps min(k, d) components. Throws std::runtime_error when
// LAPACK fails.
pca_basis pca_fit(std::span<const double> rows, size_t d, size_t k);

}  // namespace msomni::predict
