// Seeded arguments for a graph function's parameters, the same on every
// machine: each element uniform in [lo, hi) from a 64-bit LCG.
#pragma once

#include <cstdint>
#include <string>
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

// A float32 tensor of shape `s`, each element uniform in [-1, 1) from a
// 32-bit LCG seeded with `seed`.
inline Tensor random_floats(const Shape& s, uint32_t seed) {
  Tensor t = Tensor::empty(s, DType::Float32);
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data<float>()[i] = float(state >> 8) / float(1u << 24) * 2.0f - 1.0f;
  }
  return t;
}

// A tensor of shape `s` and integer type `t`, each element uniform in
// [lo, hi] from a 32-bit LCG seeded with `seed`.
inline Tensor random_ints(const Shape& s, DType t, int64_t lo, int64_t hi, uint32_t seed) {
  Tensor x = Tensor::empty(s, t);
  for (int64_t i = 0; i < x.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    x.set_from_double(i, double(lo + int64_t((seed >> 8) % uint32_t(hi - lo + 1))));
  }
  return x;
}

// A constant of IR text, `const(Tensor[(...), float32], [...])`, holding
// random_floats(s, seed) times 0.3: weights of a test network.
inline std::string random_constant_text(const Shape& s, uint32_t seed) {
  Tensor t = random_floats(s, seed);
  std::string text = "const(Tensor[(";
  for (size_t i = 0; i < s.size(); ++i) text += (i ? ", " : "") + std::to_string(s[i]);
  text += "), float32], [";
  for (int64_t i = 0; i < t.numel(); ++i) text += (i ? ", " : "") + std::to_string(0.3 * t.data<float>()[i]);
  return text + "])";
}

}  // namespace kiln::testing
