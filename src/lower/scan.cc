// Running sums: cumsum as an extern statement (te::extern_compute), since
// element i of a scan reads element i - 1 of its own output, which no
// expression per element says (as a reduction over j <= i it would cost
// n^2 / 2 additions along an axis of n).
//
//   cumsum(x: (2, 5, 3), axis=1)  =>  acc[k] = 0                    (k: the axes after `axis`)
//                                     for o, for j, for k:         (j: 0..4, or 4..0 with reverse)
//                                       acc[k] = acc[k] + float64(x[o, j, k])
//                                       y[o, j, k] = float32(acc[k])
//
// As the reference kernel (src/op/reduce.cc) computes it: floats accumulate
// in float64 and round each running sum once; integers add in their own
// type, wrapping; exclusive stores the sum before adding the element. The
// axes after `axis` are the innermost loops, the last one vectorized, so a
// cumsum over rows of a matrix adds whole rows at a time.
#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

Lowered cumsum(const LowerContext& c) {
  const Shape& xs = c.in[0].shape;
  const size_t axis = size_t(norm_axis(c.attrs.get_int("axis"), xs.size()));
  const bool exclusive = c.attrs.get_int("exclusive") != 0, reverse = c.attrs.get_int("reverse") != 0;
  const tir::DataType t = c.inputs[0]->dtype;
  const tir::DataType acc_t = t.is_float() ? tir::DataType::float_(64) : t;
  const Shape outer(xs.begin(), xs.begin() + std::ptrdiff_t(axis));
  const Shape inner(xs.begin() + std::ptrdiff_t(axis) + 1, xs.end());
  const int64_t n = xs[axis];
  const std::string name = c.name;
  auto body = [=](const std::vector<tir::Buffer>& in, const tir::Buffer& y) {
    // One running sum per position of the inner axes (one in all without any).
    std::vector<Expr> acc_shape;
    for (int64_t d : inner) acc_shape.push_back(tir::int_imm(d));
    if (acc_shape.empty()) acc_shape.push_back(tir::int_imm(1));
    tir::Buffer acc = tir::make_buffer(name + "_acc", acc_t, acc_shape);
    auto acc_at = [](const std::vector<Expr>& k) {
      return k.empty() ? std::vector<Expr>{tir::int_imm(0)} : k;
    };
    tir::Stmt scan = loop_nest(outer, "o", [&](const std::vector<Expr>& o) {
      tir::Stmt zero = loop_nest(
          inner, "z",
          [&](const std::vector<Expr>& k) { return tir::store(acc, acc_at(k), constant(0, acc_t)); },
          tir::ForKind::Vectorized);
      tir::Var j = tir::make_var("j");
      const Expr i = reverse ? tir::sub(tir::int_imm(n - 1), j) : Expr(j);
      tir::Stmt step = loop_nest(
          inner, "k",
          [&](const std::vector<Expr>& k) {
            std::vector<Expr> at = o;
            at.push_back(i);
            at.insert(at.end(), k.begin(), k.end());
            const Expr sum = tir::load(acc, acc_at(k));
            const Expr next = tir::add(sum, tir::cast(acc_t, tir::load(in[0], at)));
            if (exclusive)
              return tir::seq({tir::store(y, at, tir::cast(t, sum)), tir::store(acc, acc_at(k), next)});
            return tir::seq({tir::store(acc, acc_at(k), next),
                             tir::store(y, at, tir::cast(t, tir::load(acc, acc_at(k))))});
          },
          tir::ForKind::Vectorized);
      return tir::seq({zero, tir::for_loop(j, tir::int_imm(0), tir::int_imm(n), tir::ForKind::Serial, step)});
    });
    return tir::allocate(acc, scan);
  };
  te::Tensor y = te::extern_compute(xs, t, {c.inputs[0]}, body, c.name);
  return lowered({y});
}

}  // namespace

void register_scan_lowerings(LoweringTable& t) { t.add("cumsum", OpPattern::Opaque, cumsum, Dtypes::Any); }

}  // namespace kiln::lower
