// The forum's program (../shared/reference/hexagon-vtcm-question.md), written
// with the tensor-expression API: A and B copied into VTCM, C = A_buf + B_buf,
// the add vectorized. Tests of lowering, host codegen and Hexagon share it;
// examples/vtcm/ builds the same kernel.
#pragma once

#include "tir/te/te.h"

namespace kiln::testing {

inline tir::PrimFunc forum_vtcm_add(tir::DataType t) {
  namespace te = tir::te;
  te::Tensor A = te::placeholder({2048}, t, "A");
  te::Tensor B = te::placeholder({2048}, t, "B");
  te::Tensor C = te::compute({2048}, [&](const te::Axes& i) { return tir::add((*A)(i), (*B)(i)); }, "C");
  te::Schedule s({C});
  s.cache_read(A, "local.vtcm", {C});
  s.cache_read(B, "local.vtcm", {C});
  s[C].vectorize(s[C].leaf(0));
  return te::lower(s, {A, B, C}, "alloc_vtcm");
}

}  // namespace kiln::testing
