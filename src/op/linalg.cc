// Linear-algebra ops: det (ONNX Det).
//
// Semantics: det(x) takes a float tensor of shape [..., n, n] (rank 2 or
// more, the last two axes square) and returns the determinant of each n x n
// matrix, shape [...] (a scalar for a single matrix). It is computed by LU
// factorisation with partial pivoting in float64, whatever the storage
// dtype, and rounded once to the input's dtype: a singular matrix gives 0
// (the first all-zero pivot column stops the elimination), a 0 x 0 matrix
// gives 1 (the empty product).
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

std::vector<TensorDesc> det_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  const std::string op = "det";
  const TensorDesc& x = in[0];
  require_dtype(op, "input", x.dtype, kFloatDTypes);
  const size_t rank = x.shape.size();
  if (rank < 2 || x.shape[rank - 1] != x.shape[rank - 2])
    throw Error(op + ": input " + shape_str(x.shape) +
                " must have rank 2 or more with square last two axes [..., n, n]");
  return {{Shape(x.shape.begin(), x.shape.end() - 2), x.dtype}};
}

// Determinant of the row-major n x n matrix a (overwritten) by Gaussian
// elimination with partial pivoting.
double lu_det(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r)
      if (std::fabs(a[r * n + k]) > std::fabs(a[pivot * n + k])) pivot = r;
    const double p = a[pivot * n + k];
    if (p == 0.0) return 0.0;
    if (pivot != k) {
      for (int64_t c = k; c < n; ++c) std::swap(a[k * n + c], a[pivot * n + c]);
      det = -det;
    }
    det *= p;
    for (int64_t r = k + 1; r < n; ++r) {
      const double f = a[r * n + k] / p;
      if (f == 0.0) continue;
      for (int64_t c = k + 1; c < n; ++c) a[r * n + c] -= f * a[k * n + c];
    }
  }
  return det;
}

void det_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  const int64_t n = x.shape().back();
  const int64_t count = y.numel();
  std::vector<double> a(static_cast<size_t>(n * n));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    if constexpr (std::is_floating_point_v<C>) {
      const S* src = x.data<S>();
      S* dst = y.data<S>();
      for (int64_t m = 0; m < count; ++m) {
        for (int64_t i = 0; i < n * n; ++i)
          a[static_cast<size_t>(i)] = static_cast<double>(Tag::load(src[m * n * n + i]));
        dst[m] = Tag::store(static_cast<C>(lu_det(a, n)));
      }
    } else {
      KILN_ASSERT(false, "det dtype passed inference");
    }
  });
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  OpDef d;
  d.name = "det";
  d.summary = "determinant of each n x n matrix in the last two axes (LU with partial pivoting)";
  d.min_inputs = d.max_inputs = 1;
  d.infer = det_infer;
  d.kernel = det_kernel;
  r.add(std::move(d));
}

}  // namespace kiln
