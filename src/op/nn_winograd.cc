// A 3x3 stride-1 float32 conv by Winograd's F(m, 3) along its output rows
// (winograd.h), with the kernel transformed at compile time (the pass
// winograd-weights, src/transform/winograd_weights.cc):
//
// nn.winograd_weight(w (K, C, 3, 3)) {tile_rows = m} -> (K, C, m + 2, 3):
//   u[k, c, a, rx] = sum over ky of g[a][ky] * w[k, c, ky, rx]
//   A blocked weight (K / ob, C / ib, 3, 3, ib, ob) (nn.block_conv_weight,
//   nn_blocked.cc) likewise along its axis 2: (K / ob, C / ib, m + 2, 3, ib, ob).
// nn.conv2d_winograd(x (N, C, H, W), u (K, C, m + 2, 3)) {padding, tile_rows}
//   -> (N, K, H + top + bottom - 2, W + left + right - 2): the stride-1 conv
//   of x by the 3x3 kernel whose transform is u, so that
//   conv2d_winograd(x, winograd_weight(w, tile_rows=m), padding=p,
//   tile_rows=m) == conv2d(x, w, padding=p) up to rounding.
//   In channel blocks (NCHWc, nn_blocked.cc): x (N, C / c, H, W, c) and u
//   (K / ob, C / c, m + 2, 3, c, ob) -> (N, K / ob, OH, OW, ob), as
//   nn.conv2d_blocked is to nn.conv2d.
//
// The reference kernel computes the definition's transforms (in double) as
// the compiled kernel does in float32 (src/lower/conv_winograd.cc).
#include <string>
#include <vector>

#include "op/nn_internal.h"
#include "op/winograd.h"

namespace kiln {

const WinogradRows* winograd_rows(int64_t m) {
  static const WinogradRows f2{2,
                               {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
                               {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
                               {{1, 1, 1, 0}, {0, 1, -1, -1}}};
  static const WinogradRows f4{
      4,
      {{1.0 / 4, 0, 0},
       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
       {1.0 / 24, 1.0 / 12, 1.0 / 6},
       {1.0 / 24, -1.0 / 12, 1.0 / 6},
       {0, 0, 1}},
      {{4, 0, -5, 0, 1, 0},
       {0, -4, -4, 1, 1, 0},
       {0, 4, -4, -1, 1, 0},
       {0, -2, -1, 2, 1, 0},
       {0, 2, -1, -2, 1, 0},
       {0, 4, 0, -5, 0, 1}},
      {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};
  return m == 2 ? &f2 : m == 4 ? &f4 : nullptr;
}

namespace {

const char* kWeight = "nn.winograd_weight";
const char* kConv = "nn.conv2d_winograd";

const WinogradRows& rows_attr(const std::string& op, const Attrs& attrs) {
  const int64_t m = attrs.get_int("tile_rows");
  const WinogradRows* f = winograd_rows(m);
  if (!f) throw Error(op + ": attribute 'tile_rows' = " + std::to_string(m) + " must be 2 or 4");
  return *f;
}

std::vector<TensorDesc> infer_weight(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kWeight;
  const TensorDesc& w = in[0];
  require_float32(op, "weight", w);
  if (w.shape.size() != 6)
    require_rank(op, "weight", w, 4, "(K, C, 3, 3) or 6-D (K / ob, C / ib, 3, 3, ib, ob)");
  if (w.shape[2] != 3 || w.shape[3] != 3)
    throw Error(op + ": weight must be a 3x3 kernel (K, C, 3, 3), got shape " + shape_str(w.shape));
  Shape s = w.shape;
  s[2] = rows_attr(op, attrs).phases();
  return {{s, w.dtype}};
}

// Phase a of kernel row ky's taps, for every (K, C) pair and every element
// of the blocked form's trailing (ib, ob) axes.
void weight_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const WinogradRows& f = rows_attr(kWeight, attrs);
  const Tensor& w = in[0];
  const int64_t kc = w.dim(0) * w.dim(1), phases = f.phases();
  const int64_t inner = w.ndim() == 6 ? w.dim(4) * w.dim(5) : 1, row = 3 * inner;
  const float* src = w.data<float>();
  float* dst = out[0].data<float>();
  for (int64_t i = 0; i < kc; ++i)
    for (int64_t a = 0; a < phases; ++a)
      for (int64_t e = 0; e < row; ++e) {
        double s = 0;
        for (int64_t ky = 0; ky < 3; ++ky) s += f.g[size_t(a)][size_t(ky)] * src[(i * 3 + ky) * row + e];
        dst[(i * phases + a) * row + e] = float(s);
      }
}

std::vector<TensorDesc> infer_conv(const std::vector<TensorDesc>& in, const Attrs& attrs);

// The blocked form: the plain form's output, on the unblocked shapes, blocked.
std::vector<TensorDesc> infer_conv_blocked(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConv;
  const TensorDesc &x = in[0], &u = in[1];
  require_rank(op, "transformed weight", u, 6, "(K / ob, C / c, tile_rows + 2, 3, c, ob) for 5-D data");
  const WinogradRows& f = rows_attr(op, attrs);
  const int64_t c = x.shape[4], ob = u.shape[5];
  if (u.shape[1] != x.shape[1] || u.shape[2] != f.phases() || u.shape[3] != 3 || u.shape[4] != c)
    throw Error(op + ": transformed weight " + shape_str(u.shape) + " does not fit data " +
                shape_str(x.shape) + " and tile_rows " + std::to_string(f.m) + ": expected (K / ob, " +
                std::to_string(x.shape[1]) + ", " + std::to_string(f.phases()) + ", 3, " + std::to_string(c) +
                ", ob); its input blocks must be the data's blocks of " + std::to_string(c));
  const std::vector<TensorDesc> plain = {
      {{x.shape[0], x.shape[1] * c, x.shape[2], x.shape[3]}, x.dtype},
      {{u.shape[0] * ob, u.shape[1] * c, u.shape[2], u.shape[3]}, u.dtype}};
  const Shape s = infer_conv(plain, attrs)[0].shape;
  return {{{s[0], u.shape[0], s[2], s[3], ob}, x.dtype}};
}

std::vector<TensorDesc> infer_conv(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kConv;
  const TensorDesc &x = in[0], &u = in[1];
  require_float32(op, "data", x);
  require_float32(op, "transformed weight", u);
  if (x.shape.size() == 5) return infer_conv_blocked(in, attrs);
  require_rank(op, "data", x, 4, "(N, C, H, W) or 5-D (N, C / c, H, W, c)");
  require_rank(op, "transformed weight", u, 4, "(K, C, tile_rows + 2, 3)");
  const WinogradRows& f = rows_attr(op, attrs);
  if (u.shape[1] != x.shape[1] || u.shape[2] != f.phases() || u.shape[3] != 3)
    throw Error(op + ": transformed weight " + shape_str(u.shape) + " does not fit data " +
                shape_str(x.shape) + " and tile_rows " + std::to_string(f.m) + ": expected (K, " +
                std::to_string(x.shape[1]) + ", " + std::to_string(f.phases()) + ", 3)");
  const Pad2d p = pad2d_attr(op, attrs);
  const int64_t h = x.shape[2] + p.top + p.bottom - 2, w = x.shape[3] + p.left + p.right - 2;
  if (h < 1 || w < 1)
    throw Error(op + ": data " + shape_str(x.shape) + " padded by " +
                attr_value_str(attrs.get_ints("padding")) + " is smaller than the 3x3 kernel");
  return {{{x.shape[0], u.shape[0], h, w}, x.dtype}};
}

void conv_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  if (in[0].ndim() == 5) return run_unblocked(kConv, in, attrs, out);
  const WinogradRows& f = rows_attr(kConv, attrs);
  const Tensor &x = in[0], &u = in[1];
  const Pad2d p = pad2d_attr(kConv, attrs);
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), K = u.dim(0);
  const int64_t OH = out[0].dim(2), OW = out[0].dim(3), m = f.m, phases = f.phases();
  const int64_t tiles = (OH + m - 1) / m, width = OW + 2;
  const float* xs = x.data<float>();
  const float* us = u.data<float>();
  float* ys = out[0].data<float>();
  auto input = [&](int64_t n, int64_t c, int64_t row, int64_t col) -> double {
    row -= p.top;
    col -= p.left;
    return row < 0 || row >= H || col < 0 || col >= W ? 0.0 : xs[((n * C + c) * H + row) * W + col];
  };
  std::vector<double> v(size_t(C * phases * width)), prod(size_t(phases * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < tiles; ++t) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t a = 0; a < phases; ++a)
          for (int64_t j = 0; j < width; ++j) {
            double s = 0;
            for (int64_t i = 0; i < phases; ++i) s += f.bt[size_t(a)][size_t(i)] * input(n, c, t * m + i, j);
            v[size_t((c * phases + a) * width + j)] = s;
          }
      for (int64_t k = 0; k < K; ++k) {
        std::fill(prod.begin(), prod.end(), 0.0);
        for (int64_t c = 0; c < C; ++c)
          for (int64_t a = 0; a < phases; ++a)
            for (int64_t rx = 0; rx < 3; ++rx) {
              const double g = us[((k * C + c) * phases + a) * 3 + rx];
              const double* row = &v[size_t((c * phases + a) * width + rx)];
              for (int64_t j = 0; j < OW; ++j) prod[size_t(a * OW + j)] += g * row[j];
            }
        for (int64_t r = 0; r < m && t * m + r < OH; ++r)
          for (int64_t j = 0; j < OW; ++j) {
            double s = 0;
            for (int64_t a = 0; a < phases; ++a) s += f.at[size_t(r)][size_t(a)] * prod[size_t(a * OW + j)];
            ys[((n * K + k) * OH + t * m + r) * OW + j] = float(s);
          }
      }
    }
}

}  // namespace

void register_nn_winograd_ops(OpRegistry& r) {
  r.add({kWeight,
         "a 3x3 conv kernel transformed for Winograd's F(tile_rows, 3) along output rows: (K, C, 3, 3) -> "
         "(K, C, tile_rows + 2, 3); blocked (K / ob, C / ib, 3, 3, ib, ob) likewise along axis 2",
         1,
         1,
         {{"tile_rows", AttrKind::Int, std::nullopt}},
         false,
         infer_weight,
         weight_kernel});
  r.add({kConv,
         "stride-1 3x3 conv by Winograd's F(tile_rows, 3) along output rows, its kernel transformed by "
         "nn.winograd_weight; in NCHW or in channel blocks (NCHWc)",
         2,
         2,
         {{"padding", AttrKind::Ints, std::vector<int64_t>{0, 0, 0, 0}},
          {"tile_rows", AttrKind::Int, std::nullopt}},
         false,
         infer_conv,
         conv_kernel});
}

}  // namespace kiln
