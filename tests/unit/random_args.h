// Seeded arguments for a graph function's parameters, the same on every
// machine: each element uniform in [lo, hi) from a 64-bit LCG.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"
#include "kiln/runtime/tensor.h"

namespace kiln::testing {

inline std::vector<Tensor> random_args(const FunctionNode& fn, uint64_t seed, double lo = -1.0,
                                       double hi = 1.0) {
  std::vector<Tensor> args;
  for (const auto& p : fn.params) {
    Tensor t = Tensor::empty(p->type->tensor.shape, p->type->tensor.dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      t.set_from_double(i, lo + double(seed >> 40) / double(1 << 24) * (hi - lo));
    }
    args.push_back(t);
  }
  return args;
}

}  // namespace kiln::testing
