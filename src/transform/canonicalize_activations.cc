// canonicalize-activations: activations spelled in pieces become their op.
//
// Exporters write activations as products of smaller ops; backends and
// lowerings know the single op. A product of multiplies and divisions by
// scalar constants is read as c * f1 * f2 ..., and these products are
// rewritten (x stands for one value; the product may be written in any order
// and association):
//
//   x * nn.hard_sigmoid(x; alpha=1/6, beta=0.5)   => nn.hard_swish(x)
//   x * clip(x + 3; 0, 6) / 6   (clip(0, 6) is relu6) => nn.hard_swish(x)
//   clip(x + 3; 0, 6) / 6                         => nn.hard_sigmoid(x; alpha=1/6, beta=0.5)
//   0.5 * x * (1 + erf(x / sqrt(2)))              => nn.gelu(x; approximate="none")
//   x * sigmoid(x)                                 => nn.silu(x), when the registry has it
//
// Constants match within a relative 1e-6, so float32 spellings of 1/6 and
// sqrt(2) match. Requires: eliminate-common-subexpressions first, so both
// uses of x are one variable; fold-constants first, so the scalars are
// constants. Guarantees: each rewritten binding keeps its variable and type;
// the pieces it no longer uses are left for dead-code-elimination. Only
// float values are rewritten, and only where no factor broadcasts.
//
//   %h = nn.hard_sigmoid(%x, alpha=0.1666667, beta=0.5)
//   %y = multiply(%x, %h)
// =>
//   %h = nn.hard_sigmoid(%x, alpha=0.1666667, beta=0.5)
//   %y = nn.hard_swish(%x)
#include <cmath>
#include <numbers>
#include <unordered_map>

#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b); }

bool is_float_dtype(DType t) { return t == DType::Float32 || t == DType::Float16; }

// The activations a factor of a product can be, with x.
enum class Piece { HardSigmoid, Sigmoid, OnePlusErf };

struct Factor {
  Piece piece;
  Expr x;
  double scale;  // the factor equals scale * piece(x)
};

class ActivationCanonicalizer : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;

 protected:
  std::optional<Binding> rewrite_binding(const Binding& old, Expr value) override {
    if (Expr canonical = canonicalize(value)) value = std::move(canonical);
    std::optional<Binding> kept = ExprMutator::rewrite_binding(old, std::move(value));
    if (kept) values_[kept->var.get()] = kept->value;
    return kept;
  }

 private:
  // The op call `e` is or names (through a variable of this function).
  const CallNode* call_of(const Expr& e, const char* op) const {
    Expr v = e;
    if (auto it = values_.find(e.get()); it != values_.end()) v = it->second;
    auto* c = as<CallNode>(v);
    if (!c || !c->is_op_call() || c->op->name != op) return nullptr;
    return c;
  }

  // The value of a one-element constant that cannot change the shape it
  // multiplies (rank not above `rank`).
  std::optional<double> scalar(const Expr& e, size_t rank) const {
    Expr v = e;
    if (auto it = values_.find(e.get()); it != values_.end()) v = it->second;
    auto* c = as<ConstantNode>(v);
    if (!c || c->value.numel() != 1 || c->value.shape().size() > rank) return std::nullopt;
    return c->value.get_as_double(0);
  }

  // Splits a product into its scalar coefficient and its other factors, all
  // of type `type` (no broadcasting).
  bool split_product(const Expr& e, const Type& type, double& coef, std::vector<Expr>& factors) const {
    size_t rank = type->tensor.shape.size();
    if (std::optional<double> s = scalar(e, rank)) {
      coef *= *s;
      return true;
    }
    if (!type_equal(e->type, type)) return false;
    if (const CallNode* m = call_of(e, "multiply"))
      return split_product(m->args[0], type, coef, factors) && split_product(m->args[1], type, coef, factors);
    if (const CallNode* d = call_of(e, "divide")) {
      std::optional<double> s = scalar(d->args[1], rank);
      if (!s || *s == 0) return false;
      coef /= *s;
      return split_product(d->args[0], type, coef, factors);
    }
    factors.push_back(e);
    return true;
  }

  // x + c or c + x for a scalar constant c.
  std::optional<Expr> plus_constant(const Expr& e, double c) const {
    const CallNode* add = call_of(e, "add");
    if (!add) return std::nullopt;
    for (size_t k = 0; k < 2; ++k) {
      std::optional<double> s = scalar(add->args[1 - k], add->type->tensor.shape.size());
      if (s && near(*s, c) && type_equal(add->args[k]->type, add->type)) return add->args[k];
    }
    return std::nullopt;
  }

  // x / sqrt(2) or x * (1 / sqrt(2)) in either order.
  std::optional<Expr> over_sqrt2(const Expr& e) const {
    double coef = 1.0;
    std::vector<Expr> factors;
    if (!split_product(e, e->type, coef, factors) || factors.size() != 1) return std::nullopt;
    if (!near(coef, 1.0 / std::numbers::sqrt2)) return std::nullopt;
    return factors[0];
  }

  std::optional<Factor> factor(const Expr& e) const {
    if (const CallNode* h = call_of(e, "nn.hard_sigmoid")) {
      if (!near(h->attrs.get_float("alpha"), 1.0 / 6) || !near(h->attrs.get_float("beta"), 0.5))
        return std::nullopt;
      return Factor{Piece::HardSigmoid, h->args[0], 1.0};
    }
    if (const CallNode* c = call_of(e, "clip")) {
      // relu6(x + 3) = 6 * hard_sigmoid(x)
      if (c->attrs.get_float("a_min") != 0.0 || c->attrs.get_float("a_max") != 6.0) return std::nullopt;
      std::optional<Expr> x = plus_constant(c->args[0], 3.0);
      if (!x) return std::nullopt;
      return Factor{Piece::HardSigmoid, *x, 6.0};
    }
    if (const CallNode* s = call_of(e, "sigmoid")) return Factor{Piece::Sigmoid, s->args[0], 1.0};
    if (const CallNode* add = call_of(e, "add")) {
      // 1 + erf(x / sqrt(2)) = 2 * Phi(x)
      for (size_t k = 0; k < 2; ++k) {
        std::optional<double> one = scalar(add->args[1 - k], add->type->tensor.shape.size());
        const CallNode* erf = call_of(add->args[k], "erf");
        if (!one || !near(*one, 1.0) || !erf || !type_equal(erf->type, add->type)) continue;
        std::optional<Expr> x = over_sqrt2(erf->args[0]);
        if (x) return Factor{Piece::OnePlusErf, *x, 2.0};
      }
    }
    return std::nullopt;
  }

  // The single op `value` computes, or nullptr.
  Expr canonicalize(const Expr& value) const {
    auto* root = as<CallNode>(value);
    if (!root || !root->is_op_call() || !value->type->is_tensor()) return nullptr;
    if (root->op->name != "multiply" && root->op->name != "divide") return nullptr;
    if (!is_float_dtype(value->type->tensor.dtype)) return nullptr;
    double coef = 1.0;
    std::vector<Expr> factors;
    if (!split_product(value, value->type, coef, factors)) return nullptr;
    Expr rewritten = rewrite_product(coef, factors);
    if (!rewritten || !type_equal(rewritten->type, value->type)) return nullptr;
    return rewritten;
  }

  Expr rewrite_product(double coef, const std::vector<Expr>& factors) const {
    if (factors.size() == 1) {
      std::optional<Factor> f = factor(factors[0]);
      if (!f || f->piece != Piece::HardSigmoid || f->scale == 1.0 || !near(coef * f->scale, 1.0))
        return nullptr;
      return make_op_call("nn.hard_sigmoid", {f->x}, {{"alpha", 1.0 / 6}, {"beta", 0.5}});
    }
    if (factors.size() != 2) return nullptr;
    for (size_t k = 0; k < 2; ++k) {
      std::optional<Factor> f = factor(factors[1 - k]);
      if (!f || f->x != factors[k] || !near(coef * f->scale, 1.0)) continue;
      switch (f->piece) {
        case Piece::HardSigmoid:
          return make_op_call("nn.hard_swish", {f->x});
        case Piece::Sigmoid:
          if (!find_op("nn.silu")) return nullptr;
          return make_op_call("nn.silu", {f->x});
        case Piece::OnePlusErf:
          return make_op_call("nn.gelu", {f->x}, {{"approximate", std::string("none")}});
      }
    }
    return nullptr;
  }

  std::unordered_map<const ExprNode*, Expr> values_;
};

}  // namespace

Module canonicalize_activations(const Module& m) {
  Module out = m;
  for (auto& f : out.functions) f = ActivationCanonicalizer(&m).mutate_function(f);
  return out;
}

}  // namespace kiln
