// nn.nll_loss (ONNX NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss
// after its log_softmax) as tensor expressions:
//
//   nll_loss(x: (N, C, d...), t: (N, d...), w: (C))
//     kept[n, d...]  = t[n, d...] != ignore_index
//     loss[n, d...]  = kept ? -x[n, t, d...] * w[t] : 0          (reduction "none": the output)
//     y = float32(sum of float64(loss))                           ("sum")
//     y = float32(sum of float64(loss) / sum of float64(kept ? w[t] : 0))   ("mean")
//
// As the reference kernel (src/op/loss.cc): a product of two float32 values
// is exact in float64, so the element losses are its float32 products, and
// the sums are float64 rounded once. Targets are checked before anything is
// read (IndexCheck with the loss's message): one outside [0, C) that is not the
// ignore_index fails the kernel with the reference's message; the loads
// clamp the target, so an ignored one out of range reads nothing outside x.
#include <limits>

#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

constexpr int64_t kNoIgnore = std::numeric_limits<int64_t>::min();

Lowered nll_loss(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &target = c.inputs[1];
  const te::Tensor weight = c.inputs.size() > 2 ? c.inputs[2] : nullptr;
  const Shape& xs = c.in[0].shape;
  const Shape& ts = c.in[1].shape;
  const int64_t classes = xs[1], ignore = c.attrs.get_int("ignore_index");
  const std::string reduction = c.attrs.get_string("reduction");
  const tir::DataType t = x->dtype, f64 = tir::DataType::float_(64), i64 = tir::DataType::int64();
  if (classes == 0) return unsupported("nll_loss over zero classes");
  // At target position p: whether it counts, its class (clamped) and its weight.
  auto kept = [&](const std::vector<Expr>& p) -> Expr {
    if (ignore == kNoIgnore) return nullptr;
    return tir::binary(tir::BinaryOp::NE, tir::cast(i64, (*target)(p)), tir::int_imm(ignore, i64));
  };
  auto cls = [&](const std::vector<Expr>& p) {
    return clamp_index(tir::cast(tir::DataType::int32(), (*target)(p)), classes);
  };
  auto weight_at = [&](const std::vector<Expr>& p) {
    return weight ? (*weight)({cls(p)}) : constant(1.0, t);
  };
  auto element = [&](const std::vector<Expr>& p) {
    std::vector<Expr> at{p[0], cls(p)};
    at.insert(at.end(), p.begin() + 1, p.end());
    Expr loss = tir::mul(tir::sub(constant(0.0, t), (*x)(at)), weight_at(p));
    Expr k = kept(p);
    return k ? tir::select(k, loss, constant(0.0, t)) : loss;
  };
  Lowered r;
  if (reduction == "none") {
    r = lowered({te::compute(
        ts,
        [&](const te::Axes& i) {
          return element({i.begin(), i.end()});
        },
        c.name)});
  } else {
    std::vector<te::IterVar> axes;
    for (size_t k = 0; k < ts.size(); ++k) axes.push_back(te::reduce_axis(ts[k], "r" + std::to_string(k)));
    auto position = [&] {
      std::vector<Expr> p;
      for (const te::IterVar& a : axes) p.push_back(a.var);
      return p;
    };
    te::Tensor sum = te::compute(
        {},
        [&](const te::Axes&) -> te::Reduction { return te::sum(tir::cast(f64, element(position())), axes); },
        c.name + "_sum");
    te::Tensor weights;
    if (reduction == "mean") {
      std::vector<te::IterVar> waxes;
      for (size_t k = 0; k < ts.size(); ++k) waxes.push_back(te::reduce_axis(ts[k], "w" + std::to_string(k)));
      weights = te::compute(
          {},
          [&](const te::Axes&) -> te::Reduction {
            std::vector<Expr> p;
            for (const te::IterVar& a : waxes) p.push_back(a.var);
            Expr w = tir::cast(f64, weight_at(p));
            Expr k = kept(p);
            return te::sum(k ? tir::select(k, w, constant(0.0, f64)) : w, waxes);
          },
          c.name + "_weights");
    }
    r = lowered({te::compute(
        {},
        [&](const te::Axes&) {
          Expr s = (*sum)(std::vector<Expr>{});
          return tir::cast(t, weights ? tir::div(s, (*weights)(std::vector<Expr>{})) : s);
        },
        c.name)});
  }
  IndexCheck check{target, "nn.nll_loss", 1, {classes}};
  check.message = {"nn.nll_loss: target value ", " at flat index ",
                   " is out of range [0, " + std::to_string(classes) + ") and is not the ignore_index"};
  if (ignore != kNoIgnore) check.ignored = ignore;
  r.index_checks.push_back(check);
  return r;
}

}  // namespace

void register_loss_lowerings(LoweringTable& t) { t.add("nn.nll_loss", OpPattern::Opaque, nll_loss); }

}  // namespace kiln::lower
