// image.roi_align (ONNX RoiAlign) as a tensor expression, for a fixed
// sampling grid (sampling_ratio > 0: torchvision's and Detectron's 2): each
// output bin of each region reduces its g x g samples, each a bilinear read
// of four pixels, with the reference kernel's float32 formulas
// (src/op/roi_align.cc):
//
//   y[r, c, oy, ox] = sum over (iy, ix) of sample(r, c, y(oy, iy), x(ox, ix)) / g^2   ("avg")
//                   = max over (iy, ix) of the largest weighted pixel of the sample   ("max")
//
// The regions' batch indices are checked before anything is read (an
// IndexCheck with the reference's message). An adaptive grid
// (sampling_ratio 0: ceil(bin size) samples, which the regions decide)
// stays on the reference kernel.
#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

Expr f(double v) { return tir::float_imm(v, tir::DataType::float32()); }
Expr ge(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::GE, a, b); }
Expr gt(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::GT, a, b); }
Expr any(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::Or, a, b); }
Expr larger(const Expr& a, const Expr& b) { return tir::select(tir::lt(a, b), b, a); }  // std::max(a, b)

// A coordinate along an axis of `size` pixels as the reference splits it:
// clamped below at 0, its low and high pixels (both the last at or past
// it) and the distance past the low one.
struct Split {
  Expr lo, hi, frac;
};
Split split(const Expr& v, int64_t size) {
  Expr clamped = tir::select(tir::lt(v, f(0)), f(0), v);
  Expr low = tir::call_intrinsic(tir::Intrinsic::Floor, {clamped});
  Expr last = ge(low, f(double(size - 1)));
  return {tir::select(last, f(double(size - 1)), low),
          tir::select(last, f(double(size - 1)), tir::add(low, f(1))),
          tir::select(last, f(0), tir::sub(clamped, low))};
}

Lowered roi_align(const LowerContext& c) {
  const te::Tensor &data = c.inputs[0], &rois = c.inputs[1], &batch = c.inputs[2];
  const Shape& xs = c.in[0].shape;
  const int64_t n = xs[0], h = xs[2], w = xs[3];
  const int64_t out_h = c.attrs.get_int("output_height"), out_w = c.attrs.get_int("output_width");
  const int64_t g = c.attrs.get_int("sampling_ratio");
  if (g <= 0)
    return unsupported("adaptive sampling (sampling_ratio 0): the samples per bin depend on the regions");
  const bool max_mode = c.attrs.get_string("mode") == "max";
  const bool half_pixel = c.attrs.get_string("coordinate_transformation_mode") == "half_pixel";
  const Expr scale = f(float(c.attrs.get_float("spatial_scale"))), offset = f(half_pixel ? 0.5 : 0.0);
  te::IterVar iy = te::reduce_axis(g, "iy"), ix = te::reduce_axis(g, "ix");
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> te::Reduction {
        auto roi = [&](int k) { return (*rois)({i[0], tir::int_imm(k)}); };
        // A region's start and bin size along an axis, and the sample
        // (o, s) of its bins.
        auto axis = [&](int k, int64_t bins, const Expr& o, const tir::Var& s) {
          Expr start = tir::sub(tir::mul(roi(k), scale), offset);
          Expr size = tir::sub(tir::sub(tir::mul(roi(k + 2), scale), offset), start);
          if (!half_pixel) size = larger(size, f(1));
          Expr bin = tir::div(size, f(double(bins)));
          Expr at = tir::add(start, tir::mul(tir::cast(tir::DataType::float32(), o), bin));
          Expr within =
              tir::div(tir::mul(tir::add(tir::cast(tir::DataType::float32(), s), f(0.5)), bin), f(double(g)));
          return tir::add(at, within);
        };
        Expr sy = axis(1, out_h, i[2], iy.var), sx = axis(0, out_w, i[3], ix.var);
        Expr outside =
            any(any(tir::lt(sy, f(-1)), gt(sy, f(double(h)))), any(tir::lt(sx, f(-1)), gt(sx, f(double(w)))));
        const Split py = split(sy, h), px = split(sx, w);
        Expr ly = py.frac, lx = px.frac, hy = tir::sub(f(1), ly), hx = tir::sub(f(1), lx);
        // Outside the image every weight is 0 and every position pixel 0, as the reference's.
        auto weight = [&](const Expr& e) { return tir::select(outside, f(0), e); };
        Expr image = tir::cast(tir::DataType::int32(),
                               clamp_index(tir::cast(tir::DataType::int32(), (*batch)({i[0]})), n));
        auto pixel = [&](const Expr& row, const Expr& col) {
          return (*data)({image, i[1], tir::select(outside, tir::int_imm(0), position_index(row, h)),
                          tir::select(outside, tir::int_imm(0), position_index(col, w))});
        };
        const Expr terms[4] = {tir::mul(weight(tir::mul(hy, hx)), pixel(py.lo, px.lo)),
                               tir::mul(weight(tir::mul(hy, lx)), pixel(py.lo, px.hi)),
                               tir::mul(weight(tir::mul(ly, hx)), pixel(py.hi, px.lo)),
                               tir::mul(weight(tir::mul(ly, lx)), pixel(py.hi, px.hi))};
        if (max_mode) {
          Expr m = terms[0];
          for (int k = 1; k < 4; ++k) m = larger(m, terms[k]);
          return te::max(m, {iy, ix});
        }
        return te::sum(tir::add(tir::add(tir::add(terms[0], terms[1]), terms[2]), terms[3]), {iy, ix});
      },
      c.name + (max_mode ? "" : "_sum"));
  Lowered r;
  if (max_mode) {
    r = lowered({y});
  } else {
    const Expr count = f(double(g * g));
    r = lowered({te::compute(
        c.out[0].shape,
        [&](const te::Axes& i) { return tir::div((*y)(std::vector<Expr>(i.begin(), i.end())), count); },
        c.name)});
  }
  IndexCheck check{batch, "image.roi_align", 0, {n}};
  check.message = {"image.roi_align: batch_indices[",
                   "] = ", " is outside the batch of " + std::to_string(n) + " images"};
  check.position_first = true;
  r.index_checks.push_back(check);
  return r;
}

}  // namespace

void register_roi_align_lowerings(LoweringTable& t) {
  t.add("image.roi_align", OpPattern::Opaque, roi_align);
}

}  // namespace kiln::lower
