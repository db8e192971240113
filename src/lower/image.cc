// image.resize2d as a tensor expression: nearest and linear resizing of the
// two spatial axes of NCHW data.
//
//   resize2d(x: (1, 1, 2, 2), size=[4, 4], method="nearest")
//     =>  ih = index(o), the source coordinate of output row o computed in
//         float64 as the reference does, then rounded by rounding_method
//         y[n, c, oh, ow] = x[n, c, ih(oh), iw(ow)]
//
// Coordinates are computed with the reference's float64 formulas
// (src/op/image.cc), so nearest picks the same element; linear and cubic
// taps (2 or 4 per axis, Keys' kernel for cubic, exclude_outside's
// renormalized weights) and their sums are float64 in the reference's
// order, so they round as it does, and integers round half to even and
// saturate as it stores them.
#include <cmath>
#include <limits>
#include <numeric>

#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

tir::DataType f64() { return tir::DataType::float_(64); }
Expr d(double v) { return tir::float_imm(v, f64()); }

// The source coordinate of output index o along an axis (in -> out).
// start and end: tf_crop_and_resize's crop of this axis (fractions of in - 1).
Expr source_coord(const std::string& mode, const Expr& o, int64_t in, int64_t out, double scale, double start,
                  double end) {
  Expr od = tir::cast(f64(), o);
  double ind = double(in), outd = double(out);
  if (mode == "tf_crop_and_resize") {
    const double length = scale > 0 ? ind * scale : outd;
    if (length <= 1) return d(0.5 * (start + end) * (ind - 1));
    return tir::add(d(start * (ind - 1)),
                    tir::div(tir::mul(od, d((end - start) * (ind - 1))), d(length - 1)));
  }
  if (scale > 0) {
    double length = ind * scale;
    if (mode == "align_corners")
      return length == 1 ? d(0) : tir::div(tir::mul(od, d(ind - 1)), d(length - 1));
    if (mode == "asymmetric") return tir::div(od, d(scale));
    if (mode == "pytorch_half_pixel" && out <= 1) return d(0);
    if (mode == "tf_half_pixel_for_nn") return tir::div(tir::add(od, d(0.5)), d(scale));
    return tir::sub(tir::div(tir::add(od, d(0.5)), d(scale)), d(0.5));
  }
  if (mode == "half_pixel")
    return tir::sub(tir::div(tir::mul(tir::add(od, d(0.5)), d(ind)), d(outd)), d(0.5));
  if (mode == "pytorch_half_pixel")
    return out > 1 ? tir::sub(tir::div(tir::mul(tir::add(od, d(0.5)), d(ind)), d(outd)), d(0.5)) : d(0);
  if (mode == "align_corners") return out > 1 ? tir::div(tir::mul(od, d(ind - 1)), d(outd - 1)) : d(0);
  if (mode == "tf_half_pixel_for_nn") return tir::div(tir::mul(tir::add(od, d(0.5)), d(ind)), d(outd));
  return tir::div(tir::mul(od, d(ind)), d(outd));  // asymmetric
}

Expr to_index(const Expr& x, int64_t in) { return clamp_index(tir::cast(tir::DataType::int32(), x), in); }

Expr nearest(const std::string& rounding, const Expr& x, int64_t in) {
  Expr f = tir::call_intrinsic(tir::Intrinsic::Floor, {x});
  Expr t = tir::sub(x, f);
  Expr up;
  if (rounding == "round_prefer_floor")
    up = tir::binary(tir::BinaryOp::GT, t, d(0.5));
  else if (rounding == "round_prefer_ceil")
    up = tir::binary(tir::BinaryOp::GE, t, d(0.5));
  else if (rounding == "ceil")
    up = tir::binary(tir::BinaryOp::GT, t, d(0));
  else
    up = tir::binary(tir::BinaryOp::LT, t, d(0));  // floor: never up
  // An integral x is taken as is (t == 0 never rounds up).
  return to_index(tir::select(up, tir::add(f, d(1)), f), in);
}

// Nearest resizing whose source coordinate is the rational o * in / out
// (asymmetric coordinates from the sizes, or from an integer scale that
// maps in to out exactly: PyTorch's and Paddle's nearest upsampling): the
// index in integers, with in / out reduced to a / b, q = o * a / b
// rounded up by one as rounding_method says from the remainder. It picks
// what the float64 formula picks: a remainder r / b other than 1/2 is at
// least 1 / (2b) from it, far beyond float64's error here. A vectorized
// output row then reads ramp(...) / b, one span and a shuffle, instead of
// a float64 coordinate and a gather per lane.
std::optional<Expr> rational_nearest(const std::string& mode, const std::string& rounding, const Expr& o,
                                     int64_t in, int64_t out, double scale) {
  if (mode != "asymmetric" || in <= 0 || out <= 0) return std::nullopt;
  if (scale > 0 && (scale != std::floor(scale) || double(in) * scale != double(out))) return std::nullopt;
  const int64_t g = std::gcd(in, out), a = in / g, b = out / g;
  if (out * a > std::numeric_limits<int32_t>::max()) return std::nullopt;
  Expr num = a == 1 ? o : tir::mul(o, tir::int_imm(a, o->dtype));
  Expr q = b == 1 ? num : tir::div(num, tir::int_imm(b, o->dtype));
  if (rounding == "floor" || b == 1) return q;  // o * a / b <= in - 1 for o < out
  Expr r2 = tir::mul(tir::mod(num, tir::int_imm(b, o->dtype)), tir::int_imm(2, o->dtype));
  Expr up;
  if (rounding == "round_prefer_floor")
    up = tir::binary(tir::BinaryOp::GT, r2, tir::int_imm(b, o->dtype));
  else if (rounding == "round_prefer_ceil")
    up = tir::binary(tir::BinaryOp::GE, r2, tir::int_imm(b, o->dtype));
  else if (rounding == "ceil")
    up = tir::binary(tir::BinaryOp::GT, r2, tir::int_imm(0, o->dtype));
  else
    return std::nullopt;
  return clamp_index(tir::select(up, tir::add(q, tir::int_imm(1, o->dtype)), q), in);
}

// The taps of source coordinate x along an axis of `in` elements: `k` (2:
// linear, 4: cubic) indices, clamped into the axis, and their float64
// weights; with `exclude` a tap outside the axis weighs 0 and the others
// are divided by their sum (unless it is 0).
struct Taps {
  std::vector<Expr> index, weight;
};
Taps taps_at(const Expr& x, int64_t in, int k, double alpha, bool exclude) {
  Expr f = tir::call_intrinsic(tir::Intrinsic::Floor, {x});
  Expr t = tir::sub(x, f);
  std::vector<Expr> w = k == 4 ? cubic_weights(t, alpha) : std::vector<Expr>{tir::sub(d(1), t), t};
  Taps taps;
  Expr total = d(0);
  for (int j = 0; j < k; ++j) {
    Expr at = tir::add(f, d(double(j - (k == 4 ? 1 : 0))));
    taps.index.push_back(to_index(at, in));
    if (exclude) {
      Expr outside = tir::binary(tir::BinaryOp::Or, tir::lt(at, d(0)),
                                 tir::binary(tir::BinaryOp::GT, at, d(double(in - 1))));
      w[size_t(j)] = tir::select(outside, d(0), w[size_t(j)]);
    }
    total = tir::add(total, w[size_t(j)]);
  }
  for (int j = 0; j < k; ++j)
    taps.weight.push_back(exclude ? tir::select(tir::binary(tir::BinaryOp::NE, total, d(0)),
                                                tir::div(w[size_t(j)], total), w[size_t(j)])
                                  : w[size_t(j)]);
  return taps;
}

// A float64 result stored as `t`: floats rounded, integers rounded half to
// even and saturated, as the reference stores them.
Expr stored(const Expr& v, tir::DataType t) {
  if (t.is_float()) return tir::cast(t, v);
  const double lo = t.is_uint() ? 0.0 : -std::ldexp(1.0, t.bits - 1);
  const double hi = t.is_uint() ? std::ldexp(1.0, t.bits) - 1 : std::ldexp(1.0, t.bits - 1) - 1;
  Expr r = tir::call_intrinsic(tir::Intrinsic::Round, {v});
  r = tir::select(tir::lt(r, d(lo)), d(lo), tir::select(tir::binary(tir::BinaryOp::GT, r, d(hi)), d(hi), r));
  return tir::cast(t, r);
}

Lowered resize2d(const LowerContext& c) {
  const te::Tensor& x = c.inputs[0];
  const std::string& method = c.attrs.get_string("method");
  const std::string& mode = c.attrs.get_string("coordinate_transformation_mode");
  const std::string& rounding = c.attrs.get_string("rounding_method");
  std::vector<double> scale = c.attrs.get_floats("scale");
  if (scale.empty()) scale = {0, 0};
  std::vector<double> roi = c.attrs.get_floats("roi");
  if (roi.empty()) roi = {0, 0, 1, 1};
  const bool crops = mode == "tf_crop_and_resize";
  const double extrapolation = c.attrs.get_float("extrapolation_value");
  const double alpha = c.attrs.get_float("cubic_alpha");
  const bool exclude = c.attrs.get_int("exclude_outside") != 0;
  if (method != "nearest" && !x->dtype.is_float() && x->dtype.bits > 8)
    return unsupported("linear or cubic resizing of " + tir::dtype_str(x->dtype));
  if (mode == "tf_crop_and_resize" && !x->dtype.is_float())
    return unsupported("tf_crop_and_resize of integers (the extrapolation value's rounding)");
  const Shape &xs = c.in[0].shape, &ys = c.out[0].shape;
  int64_t H = xs[2], W = xs[3];
  te::Tensor y = te::compute(
      ys,
      [&](const te::Axes& i) -> Expr {
        Expr sy = source_coord(mode, i[2], H, ys[2], scale[0], roi[0], roi[2]);
        Expr sx = source_coord(mode, i[3], W, ys[3], scale[1], roi[1], roi[3]);
        // tf_crop_and_resize: a coordinate outside the image extrapolates.
        auto extrapolate = [&](Expr value) -> Expr {
          if (!crops) return value;
          auto out_of = [&](const Expr& s, int64_t n) {
            return tir::binary(tir::BinaryOp::Or, tir::binary(tir::BinaryOp::LT, s, d(0)),
                               tir::binary(tir::BinaryOp::GT, s, d(double(n - 1))));
          };
          Expr fill = tir::cast(x->dtype, d(extrapolation));
          return tir::select(tir::binary(tir::BinaryOp::Or, out_of(sy, H), out_of(sx, W)), fill, value);
        };
        if (method == "nearest" && !crops) {
          auto ry = rational_nearest(mode, rounding, i[2], H, ys[2], scale[0]);
          auto rx = rational_nearest(mode, rounding, i[3], W, ys[3], scale[1]);
          return (*x)({i[0], i[1], ry ? *ry : nearest(rounding, sy, H), rx ? *rx : nearest(rounding, sx, W)});
        }
        if (method == "nearest")
          return extrapolate((*x)({i[0], i[1], nearest(rounding, sy, H), nearest(rounding, sx, W)}));
        // Per row of taps, the sum of its weighted columns; then the rows'
        // (the reference's order: each sum from 0, tap by tap).
        const int k = method == "cubic" ? 4 : 2;
        const Taps ty = taps_at(sy, H, k, alpha, exclude), tx = taps_at(sx, W, k, alpha, exclude);
        auto at = [&](const Expr& h, const Expr& w) { return tir::cast(f64(), (*x)({i[0], i[1], h, w})); };
        Expr acc = d(0);
        for (int a = 0; a < k; ++a) {
          Expr row = d(0);
          for (int b = 0; b < k; ++b)
            row = tir::add(row, tir::mul(tx.weight[size_t(b)], at(ty.index[size_t(a)], tx.index[size_t(b)])));
          acc = tir::add(acc, tir::mul(ty.weight[size_t(a)], row));
        }
        return extrapolate(stored(acc, x->dtype));
      },
      c.name);
  return lowered({y});
}

}  // namespace

void register_image_lowerings(LoweringTable& t) { t.add("image.resize2d", OpPattern::Injective, resize2d); }

}  // namespace kiln::lower
