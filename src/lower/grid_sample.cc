// image.grid_sample (ONNX GridSample) as a tensor expression: each output
// element samples its image plane at the position its grid entry gives,
// with the reference kernel's float64 formulas (src/op/grid_sample.cc), so
// nearest picks the same pixel and the weighted sums round the same way.
//
//   grid_sample(x: (N, C, H, W), grid: (N, Ho, Wo, 2), mode="bilinear")
//     =>  px = unnormalize(grid[n, h, w, 0], W), py = ... (float64), padded
//         y[n, c, h, w] = (1 - ty) ((1 - tx) at(y0, x0) + tx at(y0, x0 + 1))
//                         + ty ((1 - tx) at(y0 + 1, x0) + tx at(y0 + 1, x0 + 1))
//
// at(r, c) is 0 outside the image; a position is tested in float64 before
// it becomes an index (NaN or a huge coordinate reads 0, and every load's
// index is clamped into the plane). Positions depend on (n, h, w) only:
// the grid's two coordinates are read per output element, the image's
// pixels gathered from its plane.
#include "lower/lower.h"

namespace kiln::lower {
namespace {

using tir::Expr;

tir::DataType f64() { return tir::DataType::float_(64); }
Expr d(double v) { return tir::float_imm(v, f64()); }
Expr ge(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::GE, a, b); }
Expr le(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::LE, a, b); }
Expr both(const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::And, a, b); }
Expr floor_of(const Expr& v) { return tir::call_intrinsic(tir::Intrinsic::Floor, {v}); }

enum class Padding { Zeros, Border, Reflection };

struct Sampling {
  int64_t h, w;
  bool align_corners;
  Padding padding;

  // Normalized to pixel coordinates along an axis of `size` pixels.
  Expr unnormalize(const Expr& g, int64_t size) const {
    const double n = double(size);
    if (align_corners) return tir::mul(tir::div(tir::add(g, d(1)), d(2)), d(n - 1));
    return tir::div(tir::sub(tir::mul(tir::add(g, d(1)), d(n)), d(1)), d(2));
  }

  // std::clamp(v, lo, hi): NaN passes through.
  static Expr clamp(const Expr& v, double lo, double hi) {
    return tir::select(tir::lt(v, d(lo)), d(lo), tir::select(tir::lt(d(hi), v), d(hi), v));
  }

  // v mirrored into [lo, hi] as often as needed.
  static Expr reflect(const Expr& v, double lo, double hi) {
    if (hi <= lo) return d(lo);
    const double span = hi - lo;
    Expr dist = tir::call_intrinsic(tir::Intrinsic::Abs, {tir::sub(v, d(lo))});
    Expr flips = floor_of(tir::div(dist, d(span)));
    Expr extra = tir::sub(dist, tir::mul(flips, d(span)));
    Expr even = tir::eq(tir::call_intrinsic(tir::Intrinsic::Fmod, {flips, d(2)}), d(0));
    return tir::select(even, tir::add(d(lo), extra), tir::sub(d(hi), extra));
  }

  // The padding mode applied to a position along an axis of `size` pixels.
  Expr pad(const Expr& v, int64_t size) const {
    const double last = double(size - 1);
    if (padding == Padding::Border) return clamp(v, 0, last);
    if (padding == Padding::Reflection)
      return clamp(align_corners ? reflect(v, 0, last) : reflect(v, -0.5, double(size) - 0.5), 0, last);
    return v;
  }

  // The pixel of `plane` at the integer-valued float64 position (row,
  // col), as float64; 0 outside the image.
  template <typename Plane>
  Expr at(Plane&& plane, const Expr& row, const Expr& col) const {
    Expr inside =
        both(both(ge(row, d(0)), le(row, d(double(h - 1)))), both(ge(col, d(0)), le(col, d(double(w - 1)))));
    return tir::select(inside, tir::cast(f64(), plane(position_index(row, h), position_index(col, w))), d(0));
  }
};

std::string normalized_mode(const std::string& mode) {
  if (mode == "linear") return "bilinear";  // opset 20's names
  if (mode == "cubic") return "bicubic";
  return mode;
}

Lowered grid_sample(const LowerContext& c) {
  const te::Tensor &x = c.inputs[0], &grid = c.inputs[1];
  const Shape& xs = c.in[0].shape;
  if (xs[2] == 0 || xs[3] == 0) return unsupported("grid_sample of an empty image");
  const std::string mode = normalized_mode(c.attrs.get_string("mode"));
  const std::string padding = c.attrs.get_string("padding_mode");
  const Sampling s{xs[2], xs[3], c.attrs.get_int("align_corners") != 0,
                   padding == "border"       ? Padding::Border
                   : padding == "reflection" ? Padding::Reflection
                                             : Padding::Zeros};
  te::Tensor y = te::compute(
      c.out[0].shape,
      [&](const te::Axes& i) -> Expr {
        auto coordinate = [&](int k) {
          return tir::cast(f64(), (*grid)({i[0], i[2], i[3], tir::int_imm(k)}));
        };
        auto plane = [&](const Expr& row, const Expr& col) { return (*x)({i[0], i[1], row, col}); };
        Expr px = s.unnormalize(coordinate(0), s.w), py = s.unnormalize(coordinate(1), s.h);
        if (mode == "bicubic") {
          Expr fx = floor_of(px), fy = floor_of(py);
          const std::vector<Expr> wx = cubic_weights(tir::sub(px, fx), -0.75);
          const std::vector<Expr> wy = cubic_weights(tir::sub(py, fy), -0.75);
          Expr sum = d(0);
          for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 4; ++b) {
              Expr row = tir::add(fy, d(a - 1)), col = tir::add(fx, d(b - 1));
              // A neighbour's position padded first, then truncated, as the
              // reference's int64_t(pad(row)).
              if (s.padding != Padding::Zeros) {
                row = tir::call_intrinsic(tir::Intrinsic::Floor, {s.pad(row, s.h)});
                col = tir::call_intrinsic(tir::Intrinsic::Floor, {s.pad(col, s.w)});
              }
              sum = tir::add(sum, tir::mul(tir::mul(wy[size_t(a)], wx[size_t(b)]), s.at(plane, row, col)));
            }
          return tir::cast(x->dtype, sum);
        }
        px = s.pad(px, s.w);
        py = s.pad(py, s.h);
        if (mode == "nearest") {
          Expr row = tir::call_intrinsic(tir::Intrinsic::Round, {py});
          Expr col = tir::call_intrinsic(tir::Intrinsic::Round, {px});
          return tir::cast(x->dtype, s.at(plane, row, col));
        }
        Expr fx = floor_of(px), fy = floor_of(py);
        Expr tx = tir::sub(px, fx), ty = tir::sub(py, fy);
        Expr x1 = tir::add(fx, d(1)), y1 = tir::add(fy, d(1));
        Expr ux = tir::sub(d(1), tx), uy = tir::sub(d(1), ty);
        Expr top = tir::add(tir::mul(ux, s.at(plane, fy, fx)), tir::mul(tx, s.at(plane, fy, x1)));
        Expr bottom = tir::add(tir::mul(ux, s.at(plane, y1, fx)), tir::mul(tx, s.at(plane, y1, x1)));
        return tir::cast(x->dtype, tir::add(tir::mul(uy, top), tir::mul(ty, bottom)));
      },
      c.name);
  return lowered({y});
}

}  // namespace

void register_grid_sample_lowerings(LoweringTable& t) {
  t.add("image.grid_sample", OpPattern::Injective, grid_sample);
}

}  // namespace kiln::lower
