// Tensor-expression kernels the tests share: the forum's program and the
// matmul that schedules are tried on.
#pragma once

#include "tir/te/te.h"

namespace kiln::testing {

// The forum's program (../shared/reference/hexagon-vtcm-question.md): A and
// B copied into VTCM, C = A_buf + B_buf, the add vectorized. examples/vtcm/
// builds the same kernel.
inline tir::PrimFunc forum_vtcm_add(tir::DataType t) {
  namespace te = tir::te;
  te::Tensor A = te::placeholder({2048}, t, "A");
  te::Tensor B = te::placeholder({2048}, t, "B");
  te::Tensor C = te::compute(
      {2048}, [&](const te::Axes& i) { return tir::add((*A)(i), (*B)(i)); }, "C");
  te::Schedule s({C});
  s.cache_read(A, "local.vtcm", {C});
  s.cache_read(B, "local.vtcm", {C});
  s[C].vectorize(s[C].leaf(0));
  return te::lower(s, {A, B, C}, "alloc_vtcm");
}

// C[M, N] = sum over k of A[M, K] * B[K, N], float32, not yet scheduled.
struct MatmulTe {
  tir::te::Tensor A, B, C;
  tir::te::IterVar k;
};

inline MatmulTe matmul_te(int64_t M, int64_t N, int64_t K) {
  namespace te = tir::te;
  MatmulTe m;
  m.A = te::placeholder({M, K}, tir::DataType::float32(), "A");
  m.B = te::placeholder({K, N}, tir::DataType::float32(), "B");
  m.k = te::reduce_axis(K, "k");
  m.C = te::compute(
      {M, N},
      [&](const te::Axes& i) -> te::Reduction {
        return te::sum(tir::mul((*m.A)({i[0], m.k.var}), (*m.B)({m.k.var, i[1]})), {m.k});
      },
      "C");
  return m;
}

}  // namespace kiln::testing
