// decompose-einsum: an einsum of float32 tensors becomes the sums,
// transposes, reshapes and matrix products it stands for, so it runs as the
// compiled products do (register tiles, packed constant weights, fused
// epilogues) instead of on the reference kernel's loop over every label.
//
// Two operands contract as one batched matmul: the labels both share and
// the output keeps are the batch axes, those only one keeps its rows or
// columns, those both share and the output drops the reduced axis; a label
// only one operand has and the output drops is summed out of it first.
// Three or more operands contract left to right, each intermediate keeping
// the labels the output or a later operand uses. One operand is a sum and
// a transpose.
//
//   %y = einsum(%q, %k, equation="bhqd,bhkd->bhqk")
// becomes
//   %y_k = permute_dims(%k, axes=[0, 1, 3, 2])
//   %y = matmul(%q, %y_k)
//
// Requires: nothing. Guarantees: the result has the einsum's type and
// variable; products accumulate in float32, as matmul does (the reference
// einsum accumulates in double). Left as they are: other dtypes, a label
// repeated within one operand (a diagonal) and "..." axes that broadcast
// (size 1 against another size).
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "ir/visitor.h"
#include "op/einsum.h"
#include "transform/pass.h"

namespace kiln {
namespace {

using Labels = std::vector<int>;

bool has(const Labels& l, int id) { return std::find(l.begin(), l.end(), id) != l.end(); }

// Emits the calls of one einsum as bindings, each to a fresh variable.
class Decomposer {
 public:
  Decomposer(const EinsumPlan& plan, FreshNames& fresh, const std::string& base, std::vector<Binding>& out)
      : plan_(plan), fresh_(fresh), base_(base), out_(out) {}

  // `x` with labels `l` reduced to `target`'s labels, in target's order.
  Expr contract_one(Expr x, Labels l, const Labels& target) {
    x = sum_out(std::move(x), l, target);
    return permuted(std::move(x), l, target);
  }

  // The product of `x` (labels lx) and `y` (labels ly) with labels `target`,
  // which holds only labels of x and y, each once.
  Expr contract_two(Expr x, Labels lx, Expr y, Labels ly, const Labels& target) {
    Labels keep_x = target, keep_y = target;
    keep_x.insert(keep_x.end(), ly.begin(), ly.end());
    keep_y.insert(keep_y.end(), lx.begin(), lx.end());
    x = sum_out(std::move(x), lx, keep_x);
    y = sum_out(std::move(y), ly, keep_y);
    Labels batch, rows, cols, reduced;
    for (int id : target) (has(lx, id) && has(ly, id) ? batch : has(lx, id) ? rows : cols).push_back(id);
    for (int id : lx)
      if (has(ly, id) && !has(target, id)) reduced.push_back(id);
    Labels x_order = batch, y_order = batch;
    x_order.insert(x_order.end(), rows.begin(), rows.end());
    x_order.insert(x_order.end(), reduced.begin(), reduced.end());
    y_order.insert(y_order.end(), reduced.begin(), reduced.end());
    y_order.insert(y_order.end(), cols.begin(), cols.end());
    x = permuted(std::move(x), lx, x_order);
    y = permuted(std::move(y), ly, y_order);
    Shape lead = sizes(batch);
    const int64_t m = volume(rows), k = volume(reduced), n = volume(cols);
    x = reshaped(std::move(x), concat(lead, {m, k}));
    y = reshaped(std::move(y), concat(lead, {k, n}));
    Expr product = bind(make_op_call("matmul", {x, y}), "product");
    Shape split = concat(lead, sizes(rows));
    Shape c = sizes(cols);
    split.insert(split.end(), c.begin(), c.end());
    Labels l = batch;
    l.insert(l.end(), rows.begin(), rows.end());
    l.insert(l.end(), cols.begin(), cols.end());
    return permuted(reshaped(product, split), l, target);
  }

 private:
  Shape sizes(const Labels& l) const {
    Shape s;
    for (int id : l) s.push_back(plan_.size[size_t(id)]);
    return s;
  }
  int64_t volume(const Labels& l) const {
    Shape s = sizes(l);
    return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  }
  static Shape concat(Shape a, const Shape& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  Expr bind(Expr value, const std::string& what) {
    Var v = make_var(fresh_(base_ + "_" + what), value->type);
    out_.push_back({v, std::move(value)});
    return v;
  }

  // x summed over the labels `keep` does not hold (removed from l).
  Expr sum_out(Expr x, Labels& l, const Labels& keep) {
    std::vector<int64_t> axes;
    Labels left;
    for (size_t a = 0; a < l.size(); ++a) {
      if (has(keep, l[a]))
        left.push_back(l[a]);
      else
        axes.push_back(int64_t(a));
    }
    if (axes.empty()) return x;
    Attrs attrs;
    attrs.set("axis", axes);
    l = left;
    return bind(make_op_call("sum", {std::move(x)}, attrs), "sum");
  }

  // x (labels l) with its axes in the order of `order` (the same labels).
  Expr permuted(Expr x, const Labels& l, const Labels& order) {
    if (l == order) return x;
    std::vector<int64_t> axes;
    for (int id : order) axes.push_back(int64_t(std::find(l.begin(), l.end(), id) - l.begin()));
    Attrs attrs;
    attrs.set("axes", axes);
    return bind(make_op_call("permute_dims", {std::move(x)}, attrs), "t");
  }

  // x reshaped; a reshape of one made here reshapes its source instead.
  Expr reshaped(Expr x, const Shape& shape) {
    auto source = reshape_source_.find(x.get());
    if (source != reshape_source_.end()) x = source->second;
    if (tensor_desc(x)->shape == shape) return x;
    Attrs attrs;
    attrs.set("newshape", std::vector<int64_t>(shape.begin(), shape.end()));
    Expr r = bind(make_op_call("reshape", {x}, attrs), "r");
    reshape_source_[r.get()] = x;
    return r;
  }

  const EinsumPlan& plan_;
  FreshNames& fresh_;
  const std::string& base_;
  std::vector<Binding>& out_;
  std::unordered_map<const ExprNode*, Expr> reshape_source_;
};

// The plan of an einsum this pass rewrites, or nullopt.
std::optional<EinsumPlan> decomposable(const CallNode& c) {
  std::vector<Shape> shapes;
  for (const Expr& a : c.args) {
    const TensorDesc* d = tensor_desc(a);
    if (!d || d->dtype != DType::Float32) return std::nullopt;
    shapes.push_back(d->shape);
  }
  if (c.type->tensor.dtype != DType::Float32) return std::nullopt;
  EinsumPlan plan = plan_einsum(c.attrs.get_string("equation"), shapes);
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Labels& l = plan.in_labels[k];
    for (size_t a = 0; a < l.size(); ++a)
      if (std::count(l.begin(), l.end(), l[a]) > 1 || shapes[k][a] != plan.size[size_t(l[a])])
        return std::nullopt;
  }
  return plan;
}

// The bindings that compute `b` (an einsum) into b.var; false to keep it.
bool decompose(const Binding& b, FreshNames& fresh, std::vector<Binding>& out) {
  const CallNode* c = as<CallNode>(b.value);
  if (!c || !c->is_op_call() || c->op->name != "einsum") return false;
  std::optional<EinsumPlan> plan = decomposable(*c);
  if (!plan) return false;
  const size_t first = out.size();
  Decomposer d(*plan, fresh, b.var->name, out);
  const Labels& target = plan->out_labels;
  Expr x = c->args[0];
  Labels lx = plan->in_labels[0];
  if (c->args.size() == 1) {
    x = d.contract_one(x, lx, target);
  } else {
    for (size_t k = 1; k < c->args.size(); ++k) {
      const Labels& ly = plan->in_labels[k];
      // What this step keeps: the output's labels and those a later operand uses.
      Labels step;
      if (k + 1 == c->args.size()) {
        step = target;
      } else {
        Labels both = lx;
        both.insert(both.end(), ly.begin(), ly.end());
        for (int id : both) {
          bool later = false;
          for (size_t j = k + 1; j < c->args.size(); ++j) later |= has(plan->in_labels[j], id);
          if ((later || has(target, id)) && !has(step, id)) step.push_back(id);
        }
      }
      x = d.contract_two(x, lx, c->args[k], ly, step);
      lx = step;
    }
  }
  // The last call binds the einsum's own variable (an einsum that changes
  // nothing binds its operand).
  if (out.size() > first && out.back().var == x)
    out.back().var = b.var;
  else
    out.push_back({b.var, x});
  // Reshapes a later reshape replaced are left unused: dropped.
  std::vector<const ExprNode*> used;
  for (size_t i = out.size(); i-- > first;) {
    if (i + 1 < out.size() && std::find(used.begin(), used.end(), out[i].var.get()) == used.end()) {
      out.erase(out.begin() + std::ptrdiff_t(i));
      continue;
    }
    collect_used_vars(out[i].value, used);
  }
  return true;
}

}  // namespace

Module decompose_einsum(const Module& m) { return rewrite_bindings(m, decompose); }

}  // namespace kiln
