// flatten-buffers: every buffer becomes one-dimensional.
//
// Requires: a verified function. Guarantees: each buffer has one extent (its
// element count) and no strides, and every access has one index: the sum of
// index times stride over the dimensions, with the buffer's strides or, when
// it has none, row-major strides. A vector index (ramp) in one dimension stays
// a vector; scalar terms are broadcast to its lanes. Codegen requires this.
//
//   %A: Buffer[(4, 8), float32]   %A[%i, %j]
// becomes
//   %A: Buffer[(32), float32]     %A[%i * 8 + %j]
#include <unordered_map>

#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {

namespace {

bool is_flat(const BufferNode& b) { return b.shape.size() == 1 && b.strides.empty(); }

// a + b (or a * b) where one side may be a vector and the other a scalar.
Expr combine(BinaryOp op, Expr a, Expr b) {
  if (a->dtype.element() != b->dtype.element()) {
    DataType wide = DataType::int64();
    a = cast(wide.with_lanes(a->dtype.lanes), a);
    b = cast(wide.with_lanes(b->dtype.lanes), b);
  }
  if (op == BinaryOp::Mul && b->dtype.lanes > 1 && a->dtype.lanes == 1) std::swap(a, b);
  if (op == BinaryOp::Mul && is_const_int(b, 1)) return a;
  // A ramp stays a ramp: ramp(x, s) + c = ramp(x + c, s); ramp(x, s) * c = ramp(x * c, s * c).
  if (op == BinaryOp::Add && a->dtype.lanes == 1 && b->dtype.lanes > 1) std::swap(a, b);
  if (auto* r = as<RampNode>(a); r && b->dtype.lanes == 1) {
    if (op == BinaryOp::Add) return ramp(simplify_expr(add(r->base, b)), r->stride, r->lanes);
    if (op == BinaryOp::Mul)
      return ramp(simplify_expr(mul(r->base, b)), simplify_expr(mul(r->stride, b)), r->lanes);
  }
  if (a->dtype.lanes != b->dtype.lanes) {
    if (a->dtype.lanes == 1)
      a = broadcast(a, b->dtype.lanes);
    else
      b = broadcast(b, a->dtype.lanes);
  }
  return simplify_expr(binary(op, a, b));
}

class Flattener : public Mutator {
 protected:
  Buffer mutate_buffer_ref(const Buffer& b) override {
    if (is_flat(*b)) return b;
    auto it = map_.find(b.get());
    if (it != map_.end()) return it->second;
    Expr numel = int_imm(1, b->shape.empty() ? DataType::int32() : b->shape[0]->dtype);
    for (const Expr& e : b->shape) numel = combine(BinaryOp::Mul, numel, e);
    if (!b->strides.empty()) {
      // A strided buffer spans up to the last element it can address.
      Expr span = int_imm(1, numel->dtype);
      for (size_t i = 0; i < b->shape.size(); ++i)
        span = combine(
            BinaryOp::Add, span,
            combine(BinaryOp::Mul, combine(BinaryOp::Sub, b->shape[i], int_imm(1, b->shape[i]->dtype)),
                    b->strides[i]));
      numel = span;
    }
    Buffer flat = make_buffer(b->name, b->dtype, {numel}, b->scope, b->alignment, {}, b->data);
    map_[b.get()] = flat;
    return flat;
  }

  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode& n) override {
    bool changed = false;
    auto idx = mutate_all(n.indices, &changed);
    if (is_flat(*n.buffer)) return changed ? load(n.buffer, std::move(idx)) : e;
    return load(mutate_buffer_ref(n.buffer), {linear_index(*n.buffer, idx)});
  }

  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode& n) override {
    bool changed = false;
    auto idx = mutate_all(n.indices, &changed);
    Expr v = mutate(n.value);
    if (is_flat(*n.buffer)) return changed || v != n.value ? store(n.buffer, std::move(idx), v) : s;
    return store(mutate_buffer_ref(n.buffer), {linear_index(*n.buffer, idx)}, v);
  }

 private:
  Expr linear_index(const BufferNode& b, const std::vector<Expr>& idx) {
    if (idx.empty()) return int_imm(0);
    std::vector<Expr> strides = b.strides;
    if (strides.empty()) {
      strides.resize(b.shape.size());
      Expr s = int_imm(1, b.shape.back()->dtype);
      for (size_t i = b.shape.size(); i-- > 0;) {
        strides[i] = s;
        s = combine(BinaryOp::Mul, s, b.shape[i]);
      }
    }
    Expr out;
    for (size_t i = 0; i < idx.size(); ++i) {
      Expr term = combine(BinaryOp::Mul, idx[i], strides[i]);
      out = out ? combine(BinaryOp::Add, out, term) : term;
    }
    return out;
  }

  std::unordered_map<const BufferNode*, Buffer> map_;
};

}  // namespace

PrimFunc flatten_buffers(const PrimFunc& f) { return Flattener().mutate_function(f); }

}  // namespace kiln::tir
