// unroll-loops: an `unrolled` loop of a constant extent (up to kMaxUnroll)
// becomes its body once per iteration, with the loop variable replaced by
// min + k. A register tile's rows then index their accumulators with
// constants, which LLVM keeps in registers without a full-unroll heuristic
// deciding first. Runs after vectorize-loops, so a row's vectorized inner
// loop is a single vector store by then.
//
//   for %r from 0 extent 2 unrolled { %A[%r * 8 + %j] = 0.0 }
// becomes
//   %A[0 * 8 + %j] = 0.0
//   %A[1 * 8 + %j] = 0.0
// (simplify then folds the constants).
//
// Bodies that define a variable or buffer (an inner loop, a let, an
// allocation) are left as loops with their hint for LLVM, since each copy
// would need fresh names.
#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

constexpr int64_t kMaxUnroll = 64;

class Unroller : public Mutator {
 protected:
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    Stmt m = Mutator::mutate_For(s, n);
    auto& f = static_cast<const ForNode&>(*m);
    auto extent = as_const_int(f.extent);
    if (f.for_kind != ForKind::Unrolled || !extent || *extent < 1 || *extent > kMaxUnroll) return m;
    if (defines_names(f.body)) return m;
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < *extent; ++k)
      copies.push_back(substitute(f.body, {{f.var.get(), add(f.min, int_imm(k, f.var->dtype))}}));
    return seq(std::move(copies));
  }
};

}  // namespace

PrimFunc unroll_loops(const PrimFunc& f) { return Unroller().mutate_function(f); }

}  // namespace kiln::tir
