// Scatters as extern statements (te::extern_compute): scatter_elements,
// scatter_nd and nn.max_unpool write updates to positions their indices compute, in the
// order of the indices (a later duplicate wins, or combines), which no
// expression per output element says.
//
//   scatter_elements(data, indices, updates, axis=1)  =>  y = data           (a vectorized copy)
//                                                          for p0, for p1:
//                                                            y[p0, wrap(indices[p0, p1])] = updates[p0, p1]
//   scatter_nd(data, indices: (t, 2), updates)        =>  y = data
//                                                          for t, for s:
//                                                            y[wrap(indices[t, 0]), wrap(indices[t, 1]), s] =
//                                                            updates[t, s]
//
// Every index is checked before anything is written (IndexCheck: the
// reference kernel's message for the first one outside [-size, size), in
// the order the reference reads them). Reductions combine as the reference
// (src/op/scatter.cc) does, in data's dtype: add and mul (integers wrap),
// max and min keeping the old value unless the update compares greater
// (smaller), so a NaN update leaves it and a NaN old value stays.
#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

// The old value combined with an update by the "reduction" attribute
// (type inference has refused any other name).
Expr combined(const std::string& reduction, const Expr& old, const Expr& update) {
  if (reduction == "add") return tir::add(old, update);
  if (reduction == "mul") return tir::mul(old, update);
  if (reduction == "max") return tir::select(tir::binary(tir::BinaryOp::GT, update, old), update, old);
  if (reduction == "min") return tir::select(tir::lt(update, old), update, old);
  KILN_ASSERT(reduction == "none", "scatter reduction \"" + reduction + "\" passed inference");
  return update;
}

// data copied to y, the innermost loop vectorized.
tir::Stmt copy(const tir::Buffer& data, const tir::Buffer& y, const Shape& shape) {
  return loop_nest(
      shape, "c", [&](const std::vector<Expr>& i) { return tir::store(y, i, tir::load(data, i)); },
      tir::ForKind::Vectorized);
}

Lowered scatter_elements(const LowerContext& c) {
  const Shape &xs = c.in[0].shape, &is = c.in[1].shape;
  const size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), xs.size()));
  const int64_t size = xs[axis];
  const std::string reduction = c.attrs.get_string("reduction");
  auto body = [=](const std::vector<tir::Buffer>& in, const tir::Buffer& y) {
    const tir::Buffer &data = in[0], &indices = in[1], &updates = in[2];
    tir::Stmt scatter = loop_nest(is, "p", [&](const std::vector<Expr>& p) {
      std::vector<Expr> at = p;
      at[axis] = wrapped_index(tir::load(indices, p), size, tir::DataType::int32());
      return tir::store(y, at, combined(reduction, tir::load(y, at), tir::load(updates, p)));
    });
    return tir::seq({copy(data, y, xs), scatter});
  };
  te::Tensor y = te::extern_compute(xs, c.inputs[0]->dtype, c.inputs, body, c.name);
  Lowered r = lowered({y});
  r.index_checks.push_back({c.inputs[1], "scatter_elements", int(axis), {size}});
  return r;
}

Lowered scatter_nd(const LowerContext& c) {
  const Shape &xs = c.in[0].shape, &is = c.in[1].shape;
  const size_t m = size_t(is.back());
  const Shape tuples(is.begin(), is.end() - 1), slice(xs.begin() + std::ptrdiff_t(m), xs.end());
  const std::string reduction = c.attrs.get_string("reduction");
  auto body = [=](const std::vector<tir::Buffer>& in, const tir::Buffer& y) {
    const tir::Buffer &data = in[0], &indices = in[1], &updates = in[2];
    tir::Stmt scatter = loop_nest(tuples, "t", [&](const std::vector<Expr>& t) {
      std::vector<Expr> at;
      for (size_t j = 0; j < m; ++j) {
        std::vector<Expr> element = t;
        element.push_back(tir::int_imm(int64_t(j)));
        at.push_back(wrapped_index(tir::load(indices, element), xs[j], tir::DataType::int32()));
      }
      return loop_nest(slice, "s", [&](const std::vector<Expr>& s) {
        std::vector<Expr> to = at, from = t;
        to.insert(to.end(), s.begin(), s.end());
        from.insert(from.end(), s.begin(), s.end());
        return tir::store(y, to, combined(reduction, tir::load(y, to), tir::load(updates, from)));
      });
    });
    return tir::seq({copy(data, y, xs), scatter});
  };
  te::Tensor y = te::extern_compute(xs, c.inputs[0]->dtype, c.inputs, body, c.name);
  Lowered r = lowered({y});
  r.index_checks.push_back({c.inputs[1], "scatter_nd", 0, Shape(xs.begin(), xs.begin() + std::ptrdiff_t(m))});
  return r;
}

// nn.max_unpool(data, indices): zeros of the output's shape, then each data
// element stored at the flat output position its index names, in data's
// row-major order (a later duplicate wins, as in the reference). Every
// index is checked against [0, size) first, in the reference's words.
Lowered max_unpool(const LowerContext& c) {
  const Shape &xs = c.in[0].shape, &ys = c.out[0].shape;
  int64_t size = 1;
  for (int64_t d : ys) size *= d;
  auto body = [=](const std::vector<tir::Buffer>& in, const tir::Buffer& y) {
    const tir::Buffer &data = in[0], &indices = in[1];
    tir::Stmt zeros = loop_nest(
        ys, "z", [&](const std::vector<Expr>& i) { return tir::store(y, i, constant(0, y->dtype)); },
        tir::ForKind::Vectorized);
    tir::Stmt scatter = loop_nest(xs, "p", [&](const std::vector<Expr>& p) {
      // The flat position as the output's coordinates, innermost last.
      Expr flat = tir::cast(tir::DataType::int64(), tir::load(indices, p));
      std::vector<Expr> at(ys.size());
      for (size_t k = ys.size(); k-- > 0;) {
        const Expr extent = tir::int_imm(ys[k], tir::DataType::int64());
        at[k] = tir::cast(tir::DataType::int32(), k == 0 ? flat : tir::mod(flat, extent));
        if (k > 0) flat = tir::div(flat, extent);
      }
      return tir::store(y, at, tir::load(data, p));
    });
    return tir::seq({zeros, scatter});
  };
  te::Tensor y = te::extern_compute(ys, c.inputs[0]->dtype, {c.inputs[0], c.inputs[1]}, body, c.name);
  Lowered r = lowered({y});
  IndexCheck check{c.inputs[1], c.op, 0, {size}};
  check.message = {
      c.op + ": index ", " at flat position ",
      " is outside the output " + shape_str(ys) + " (valid: 0 to " + std::to_string(size - 1) + ")"};
  r.index_checks.push_back(check);
  return r;
}

}  // namespace

void register_scatter_lowerings(LoweringTable& t) {
  t.add("scatter_elements", OpPattern::Opaque, scatter_elements);
  t.add("scatter_nd", OpPattern::Opaque, scatter_nd);
  t.add("nn.max_unpool", OpPattern::Opaque, max_unpool);
}

}  // namespace kiln::lower
