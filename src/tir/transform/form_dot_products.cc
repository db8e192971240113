// form-dot-products: int8 products (or uint8 by int8) accumulated by fours
// into int32 become dot_i8x4, options.dot_lanes columns at a time (on
// Hexagon 32, one HVX vrmpy each; on x86 with VNNI 16 or 8, one vpdpbusd).
//
// Requires flat buffers (flatten-buffers: one index per access). Matches a
// loop over columns j (extent >= 32, from 0) around a loop over k (extent 4,
// from 0) that holds one store,
//
//   for %j from 0 extent 64 {
//     for %k from 0 extent 4 {
//       %acc[a + j] = %acc[a + j] + cast<int32>(%x[b + 4 * j + k]) * cast<int32>(%w[c + k])
//     }
//   }
//
// (a, b and c free of j and k; the two operands in either order; x int8 or
// uint8, w int8), and rewrites it, each 32 columns (for 32 lanes) reading
// 128 contiguous bytes of x and the same four bytes of w for every column
// (or the other way round: x[b + k] and w[c + 4 * j + k], a block of output
// channels' weights by one position's four input channels broadcast, as
// a uint8 conv in channel blocks reads them):
//
//   for %j_dot from 0 extent 2 {
//     %acc[ramp(a + j_dot * 32, 1, 32)] = dot_i8x4(%acc[ramp(a + j_dot * 32, 1, 32)],
//         %x[ramp(b + j_dot * 128, 1, 128)], %w[broadcast(c, 128) + ramp(0, 1, 128) % broadcast(4, 128)])
//   }
//
// Columns past the last whole 32 keep the original loop. Runs only when
// options.dot_lanes is set.
//
// In the same way int16 products accumulated by pairs (a loop over k of
// extent 2, x and w int16, the indices 2 * j + k or k) become dot_i16x2 of
// options.dot16_lanes columns (x86: one vpmaddwd and an add), when that is
// set.
#include <map>

#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::tir {
namespace {

// An index as a sum of terms times constants plus a constant, when it is
// one (flattened loop indices are): what the match reads coefficients from.
// A term is a variable, or a subexpression that is no such sum (a quotient
// of loop variables: a tile's output channel) and uses neither loop the
// match looks at (`j`, `k`); it counts as one term of its own.
struct Linear {
  std::map<const ExprNode*, int64_t> coef;
  int64_t constant = 0;
};

std::optional<Linear> linear(const Expr& e, const Var& j, const Var& k) {
  if (auto c = as_const_int(e)) return Linear{{}, *c};
  if (auto* v = as<VarNode>(e)) return Linear{{{v, 1}}, 0};
  auto opaque = [&]() -> std::optional<Linear> {
    if (uses_var(e, j) || uses_var(e, k)) return std::nullopt;
    return Linear{{{e.get(), 1}}, 0};
  };
  auto* b = as<BinaryNode>(e);
  if (!b) return opaque();
  auto l = linear(b->a, j, k), r = linear(b->b, j, k);
  if (!l || !r) return opaque();
  if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
    int64_t sign = b->op == BinaryOp::Add ? 1 : -1;
    for (const auto& [v, c] : r->coef) l->coef[v] += sign * c;
    l->constant += sign * r->constant;
    return l;
  }
  if (b->op != BinaryOp::Mul) return opaque();
  if (!r->coef.empty()) std::swap(l, r);
  if (!r->coef.empty()) return opaque();  // a product of two terms
  for (auto& [v, c] : l->coef) c *= r->constant;
  l->constant *= r->constant;
  return l;
}

int64_t coefficient(const Linear& l, const Var& v) {
  auto it = l.coef.find(v.get());
  return it == l.coef.end() ? 0 : it->second;
}

bool same(const Linear& a, const Linear& b) {
  auto nonzero = [](const Linear& l) {
    std::map<const ExprNode*, int64_t> m;
    for (const auto& [v, c] : l.coef)
      if (c) m[v] = c;
    return m;
  };
  return a.constant == b.constant && nonzero(a) == nonzero(b);
}

// An operand widened to int32 from `bits` bits: signed, or unsigned too
// where `unsigned_ok`.
const BufferLoadNode* narrow_operand(const Expr& e, int bits, bool unsigned_ok) {
  auto* c = as<CastNode>(e);
  if (!c || c->dtype != DataType::int32()) return nullptr;
  auto* l = as<BufferLoadNode>(c->value);
  if (!l || l->indices.size() != 1) return nullptr;
  if (l->dtype != DataType::int_(bits) && !(unsigned_ok && l->dtype == DataType::uint(bits))) return nullptr;
  return l;
}

// The dot product a loop of `group` products per lane becomes: four bytes
// (dot_i8x4, x int8 or uint8) or two int16 (dot_i16x2), on `lanes` lanes.
struct DotForm {
  int64_t group;
  int bits;
  bool unsigned_x;
  Intrinsic intrinsic;
  int64_t lanes;
};

class DotProducts : public Mutator {
 public:
  explicit DotProducts(std::vector<DotForm> forms) : forms_(std::move(forms)) {}

 protected:
  Stmt mutate_For(const Stmt& s, const ForNode& n) override {
    Stmt m = Mutator::mutate_For(s, n);
    auto& f = static_cast<const ForNode&>(*m);
    if (auto r = rewrite(f)) return *r;
    return m;
  }

 private:
  std::optional<Stmt> rewrite(const ForNode& cols) {
    for (const DotForm& form : forms_)
      if (auto s = rewrite(cols, form)) return s;
    return std::nullopt;
  }

  std::optional<Stmt> rewrite(const ForNode& cols, const DotForm& form) {
    const int64_t g = form.group;
    auto extent = as_const_int(cols.extent);
    auto inner = as<ForNode>(cols.body);
    if (!extent || *extent < form.lanes || as_const_int(cols.min) != 0 || !inner) return std::nullopt;
    if (as_const_int(inner->extent) != g || as_const_int(inner->min) != 0) return std::nullopt;
    auto* st = as<BufferStoreNode>(inner->body);
    if (!st || st->indices.size() != 1 || st->buffer->dtype != DataType::int32()) return std::nullopt;
    auto* add_node = as<BinaryNode>(st->value);
    if (!add_node || add_node->op != BinaryOp::Add) return std::nullopt;
    const Var &j = cols.var, &k = inner->var;
    const Expr& index = st->indices[0];
    // acc + x * w, the accumulator on either side.
    auto out = linear(index, j, k);
    if (!out || coefficient(*out, j) != 1 || coefficient(*out, k) != 0) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      auto* acc = as<BufferLoadNode>(side ? add_node->b : add_node->a);
      auto* mul_node = as<BinaryNode>(side ? add_node->a : add_node->b);
      // (Flattening gives each access its own buffer object: buffers compare by name.)
      if (!acc || !mul_node || mul_node->op != BinaryOp::Mul || acc->buffer->name != st->buffer->name)
        continue;
      auto acc_index = linear(acc->indices[0], j, k);
      if (!acc_index || !same(*acc_index, *out)) continue;  // the same element
      for (int order = 0; order < 2; ++order) {
        const BufferLoadNode* x =
            narrow_operand(order ? mul_node->b : mul_node->a, form.bits, form.unsigned_x);
        const BufferLoadNode* w = narrow_operand(order ? mul_node->a : mul_node->b, form.bits, false);
        if (!x || !w) continue;
        auto xi = linear(x->indices[0], j, k), wi = linear(w->indices[0], j, k);
        if (!xi || !wi || coefficient(*xi, k) != 1 || coefficient(*wi, k) != 1) continue;
        // x's four bytes a column and w's the same for all (x a row of an
        // image), or w's a column and x's the same (x one position's
        // channels broadcast, w a block of output channels' weights).
        const int64_t xj = coefficient(*xi, j), wj = coefficient(*wi, j);
        if ((xj == g && wj == 0) || (xj == 0 && wj == g))
          return build(cols, *extent, form, st->buffer, index, *x, xj == g, *w, wj == g);
      }
    }
    return std::nullopt;
  }

  // `x_runs` / `w_runs`: the operand reads a group (four bytes, two int16)
  // a column (group * lanes contiguous elements a vector), else the same
  // group for every column.
  Stmt build(const ForNode& cols, int64_t extent, const DotForm& form, const Buffer& acc, const Expr& index,
             const BufferLoadNode& x, bool x_runs, const BufferLoadNode& w, bool w_runs) {
    const int64_t lanes = form.lanes, g = form.group;
    const Var& j = cols.var;
    DataType it = j->dtype;
    auto at_zero = [&](const Expr& e) {
      const Var& k = as<ForNode>(cols.body)->var;
      return simplify_expr(substitute(e, {{j.get(), int_imm(0, it)}, {k.get(), int_imm(0, k->dtype)}}));
    };
    Var jd = make_var(j->name + "_dot", it);
    Expr acc_index =
        ramp(simplify_expr(add(at_zero(index), mul(jd, int_imm(lanes, it)))), int_imm(1, it), lanes);
    auto operand_index = [&](const BufferLoadNode& l, bool runs) {
      if (runs)
        return ramp(simplify_expr(add(at_zero(l.indices[0]), mul(jd, int_imm(g * lanes, it)))),
                    int_imm(1, it), g * lanes);
      DataType t = l.indices[0]->dtype;
      return add(broadcast(at_zero(l.indices[0]), g * lanes),
                 mod(ramp(int_imm(0, t), int_imm(1, t), g * lanes), broadcast(int_imm(g, t), g * lanes)));
    };
    Expr x_index = operand_index(x, x_runs), w_index = operand_index(w, w_runs);
    Expr dot = call_intrinsic(form.intrinsic,
                              {load(acc, {acc_index}), load(x.buffer, {x_index}), load(w.buffer, {w_index})});
    std::vector<Stmt> out;
    const int64_t whole = extent / lanes;
    out.push_back(for_loop(jd, int_imm(0, it), int_imm(whole, it),
                           whole <= 4 ? ForKind::Unrolled : ForKind::Serial, store(acc, {acc_index}, dot)));
    if (extent % lanes)
      out.push_back(for_loop(j, int_imm(whole * lanes, it), int_imm(extent - whole * lanes, it),
                             cols.for_kind, cols.body));
    return seq(std::move(out));
  }

  const std::vector<DotForm> forms_;
};

}  // namespace

PrimFunc form_dot_products(const PrimFunc& f, const TirPassOptions& options) {
  std::vector<DotForm> forms;
  if (options.dot_lanes) forms.push_back({4, 8, true, Intrinsic::DotI8x4, options.dot_lanes});
  if (options.dot16_lanes) forms.push_back({2, 16, false, Intrinsic::DotI16x2, options.dot16_lanes});
  if (forms.empty()) return f;
  return DotProducts(std::move(forms)).mutate_function(f);
}

}  // namespace kiln::tir
