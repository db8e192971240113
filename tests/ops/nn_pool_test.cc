// nn.max_pool2d, nn.avg_pool2d and nn.adaptive_avg_pool2d against hand-computed
// values and a naive per-output implementation written here.
#include <limits>

#include "op_test_util.h"

namespace kiln {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::expect_error;
using testing::random_tensor;
using testing::run1;

Tensor plane(int64_t h, int64_t w, const std::vector<float>& v) {
  return Tensor::from_floats({1, 1, h, w}, v);
}
std::vector<int64_t> ints(std::initializer_list<int64_t> v) { return v; }

TEST(NnMaxPool2d, HandComputed) {
  Tensor x = plane(4, 4, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  Tensor y = run1("nn.max_pool2d", {x}, {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  expect_equal(y, {6, 8, 14, 16});
}

TEST(NnMaxPool2d, PaddingNeverWins) {
  Tensor x = plane(2, 2, {-1, -2, -3, -4});
  Tensor y = run1("nn.max_pool2d", {x}, {{"pool_size", ints({2, 2})}, {"padding", ints({1, 1})}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
  expect_equal(y, {-1, -1, -2, -1, -1, -2, -3, -3, -4});
}

TEST(NnMaxPool2d, CeilModeAddsPartialWindow) {
  std::vector<float> v(25);
  for (int i = 0; i < 25; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  Tensor x = plane(5, 5, v);
  Attrs a = {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}};
  Tensor floor_y = run1("nn.max_pool2d", {x}, a);
  expect_equal(floor_y, {6, 8, 16, 18});
  a.set("ceil_mode", int64_t{1});
  Tensor ceil_y = run1("nn.max_pool2d", {x}, a);
  EXPECT_EQ(ceil_y.shape(), (Shape{1, 1, 3, 3}));
  expect_equal(ceil_y, {6, 8, 9, 16, 18, 19, 21, 23, 24});
  // With padding 1, ceil would give 4 windows, but the 4th would start in the
  // right padding, so it is dropped: 3, as with floor.
  a.set("padding", ints({1, 1}));
  EXPECT_EQ(run1("nn.max_pool2d", {x}, a).shape(), (Shape{1, 1, 3, 3}));
}

TEST(NnAvgPool2d, CountIncludePad) {
  Tensor x = plane(3, 3, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  Attrs a = {{"pool_size", ints({3, 3})}, {"padding", ints({1, 1})}};
  expect_close(run1("nn.avg_pool2d", {x}, a), {1, 1, 1, 1, 1, 1, 1, 1, 1}, 1e-7);
  a.set("count_include_pad", int64_t{1});
  expect_close(run1("nn.avg_pool2d", {x}, a),
               {4. / 9, 6. / 9, 4. / 9, 6. / 9, 1, 6. / 9, 4. / 9, 6. / 9, 4. / 9}, 1e-6);
}

TEST(NnAvgPool2d, CeilModeOverhangNeverCounts) {
  // 3 wide, window 2, stride 2, ceil: the second window covers column 2 and
  // one column past the input (no padding there): its divisor is 1 either way.
  Tensor x = plane(1, 3, {2, 4, 9});
  Attrs a = {{"pool_size", ints({1, 2})},
             {"strides", ints({1, 2})},
             {"ceil_mode", int64_t{1}},
             {"count_include_pad", int64_t{1}}};
  expect_close(run1("nn.avg_pool2d", {x}, a), {3, 9}, 1e-7);
}

TEST(NnPool2d, Int8AvgRoundsHalfAwayFromZero) {
  Tensor x = Tensor::from_ints({1, 1, 2, 4}, {1, 2, -1, -2, 3, 4, -5, 126}, DType::Int8);
  Attrs a = {{"pool_size", ints({1, 2})}, {"strides", ints({1, 2})}};
  Tensor avg = run1("nn.avg_pool2d", {x}, a);
  EXPECT_EQ(avg.dtype(), DType::Int8);
  expect_equal(avg, {2, -2, 4, 61});  // 1.5 -> 2, -1.5 -> -2, 3.5 -> 4, 60.5 -> 61
  Tensor mx = run1("nn.max_pool2d", {x}, a);
  expect_equal(mx, {2, -1, 4, 126});
}

// Naive pooling: for each output, visit every tap and test it against the input and padding.
std::vector<double> naive_pool(const Tensor& x, bool is_max, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                               std::vector<int64_t> pad, int64_t dh, int64_t dw, bool ceil_mode, bool cip,
                               Shape* shape) {
  int64_t h = x.dim(2), w = x.dim(3);
  auto out_len = [&](int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pa, int64_t d) {
    double span = static_cast<double>(in + pb + pa - d * (k - 1) - 1);
    int64_t o = static_cast<int64_t>(ceil_mode ? std::ceil(span / s) : std::floor(span / s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + pb) --o;
    return o;
  };
  int64_t oh = out_len(h, kh, sh, pad[0], pad[2], dh), ow = out_len(w, kw, sw, pad[1], pad[3], dw);
  *shape = {x.dim(0), x.dim(1), oh, ow};
  std::vector<double> out;
  for (int64_t p = 0; p < x.dim(0) * x.dim(1); ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t n_in = 0, n_padded = 0;
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            int64_t iy = oy * sh - pad[0] + ky * dh, ix = ox * sw - pad[1] + kx * dw;
            if (iy >= -pad[0] && iy < h + pad[2] && ix >= -pad[1] && ix < w + pad[3]) ++n_padded;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            double v = x.get_as_double((p * h + iy) * w + ix);
            best = std::max(best, v);
            sum += v;
            ++n_in;
          }
        out.push_back(is_max ? best : sum / static_cast<double>(cip ? n_padded : n_in));
      }
  return out;
}

TEST(NnPool2d, MatchesNaive) {
  struct Case {
    Shape x;
    int64_t kh, kw, sh, sw;
    std::vector<int64_t> pad;
    int64_t dh, dw;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {
      {{1, 2, 7, 7}, 3, 3, 2, 2, {1, 1, 1, 1}, 1, 1, false},
      {{2, 3, 8, 9}, 3, 2, 2, 3, {0, 1, 2, 0}, 1, 1, true},
      {{1, 2, 9, 10}, 2, 3, 1, 2, {1, 2, 1, 0}, 2, 2, false},
      {{1, 1, 10, 10}, 3, 3, 3, 3, {1, 1, 1, 1}, 1, 1, true},
      {{1, 4, 6, 5}, 2, 2, 2, 2, {0, 0, 1, 1}, 1, 1, true},
  };
  uint32_t seed = 70;
  for (const Case& c : cases)
    for (bool is_max : {true, false})
      for (bool cip : {false, true}) {
        if (is_max && cip) continue;
        Tensor x = random_tensor(c.x, DType::Float32, seed++);
        Attrs a = {{"pool_size", ints({c.kh, c.kw})},
                   {"strides", ints({c.sh, c.sw})},
                   {"padding", c.pad},
                   {"dilation", ints({c.dh, c.dw})},
                   {"ceil_mode", int64_t{c.ceil_mode}}};
        if (!is_max) a.set("count_include_pad", int64_t{cip});
        Shape shape;
        std::vector<double> want =
            naive_pool(x, is_max, c.kh, c.kw, c.sh, c.sw, c.pad, c.dh, c.dw, c.ceil_mode, cip, &shape);
        Tensor y = run1(is_max ? "nn.max_pool2d" : "nn.avg_pool2d", {x}, a);
        EXPECT_EQ(y.shape(), shape) << shape_str(c.x);
        expect_close(y, want, 1e-6, shape_str(c.x) + (is_max ? " max" : cip ? " avg+pad" : " avg"));
      }
}

TEST(NnAdaptiveAvgPool2d, Bins) {
  std::vector<float> v(25);
  for (int i = 0; i < 25; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  Tensor x = plane(5, 5, v);
  // Axis of 5 into 3 bins: rows [0, 2), [1, 4), [3, 5).
  const int64_t lo[] = {0, 1, 3}, hi[] = {2, 4, 5};
  std::vector<double> want;
  for (int oy = 0; oy < 3; ++oy)
    for (int ox = 0; ox < 3; ++ox) {
      double s = 0;
      for (int64_t y = lo[oy]; y < hi[oy]; ++y)
        for (int64_t xx = lo[ox]; xx < hi[ox]; ++xx) s += static_cast<double>(y * 5 + xx);
      want.push_back(s / static_cast<double>((hi[oy] - lo[oy]) * (hi[ox] - lo[ox])));
    }
  Tensor y = run1("nn.adaptive_avg_pool2d", {x}, {{"output_size", ints({3, 3})}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
  expect_close(y, want, 1e-6);
  // Global average pooling is the default output size.
  Tensor g = run1("nn.adaptive_avg_pool2d", {x});
  expect_close(g, {12}, 1e-7);
  // int8 rounds half away from zero: mean of {-1, -2} is -1.5 -> -2.
  Tensor xi = Tensor::from_ints({1, 2, 1, 2}, {-1, -2, 5, 6}, DType::Int8);
  expect_equal(run1("nn.adaptive_avg_pool2d", {xi}), {-2, 6});
}

TEST(NnPool2d, Float16AndUInt8) {
  Tensor xh = Tensor::empty({1, 1, 2, 2}, DType::Float16);
  const double hv[] = {0.5, -1.25, 3.0, 2.0};
  for (int i = 0; i < 4; ++i) xh.set_from_double(i, hv[i]);
  Attrs a = {{"pool_size", ints({2, 2})}};
  Tensor mh = run1("nn.max_pool2d", {xh}, a);
  EXPECT_EQ(mh.dtype(), DType::Float16);
  expect_equal(mh, {3.0});
  expect_equal(run1("nn.avg_pool2d", {xh}, a), {1.0625});  // 4.25 / 4, exact in float16
  Tensor xu = Tensor::from_ints({1, 1, 1, 4}, {255, 254, 0, 1}, DType::UInt8);
  Attrs b = {{"pool_size", ints({1, 2})}, {"strides", ints({1, 2})}};
  Tensor au = run1("nn.avg_pool2d", {xu}, b);
  EXPECT_EQ(au.dtype(), DType::UInt8);
  expect_equal(au, {255, 1});  // 254.5 -> 255, 0.5 -> 1
}

TEST(NnPool2d, Errors) {
  Tensor x = Tensor::zeros({1, 1, 4, 4}, DType::Float32);
  expect_error([&] { run1("nn.max_pool2d", {x}); }, "nn.max_pool2d: missing required attribute 'pool_size'");
  expect_error(
      [&] {
        run1("nn.max_pool2d", {x}, {{"pool_size", ints({5, 5})}});
      },
      "nn.max_pool2d: the window (pool_size [5, 5], dilation [1, 1]) is larger than the padded input");
  expect_error(
      [&] {
        run1("nn.avg_pool2d", {x}, {{"pool_size", ints({2, 0})}});
      },
      "nn.avg_pool2d: attribute 'pool_size' = [2, 0] has a value below 1");
  expect_error(
      [&] {
        run1("nn.avg_pool2d", {x}, {{"pool_size", ints({2, 2})}, {"ceil_mode", int64_t{2}}});
      },
      "nn.avg_pool2d: attribute 'ceil_mode' = 2 must be 0 or 1");
  expect_error(
      [&] {
        run1("nn.max_pool2d", {Tensor::zeros({1, 4, 4}, DType::Float32)}, {{"pool_size", ints({2, 2})}});
      },
      "nn.max_pool2d: data must be 4-D (N, C, H, W) or 5-D channel blocks (N, C / c, H, W, c), got shape (1, "
      "4, 4)");
  expect_error(
      [&] {
        run1("nn.adaptive_avg_pool2d", {x}, {{"output_size", ints({0, 2})}});
      },
      "nn.adaptive_avg_pool2d: attribute 'output_size' = [0, 2] must be [out_h, out_w]");
  expect_error(
      [&] {
        run1("nn.max_pool2d", {Tensor::zeros({1, 1, 4, 4}, DType::Bool)}, {{"pool_size", ints({2, 2})}});
      },
      "nn.max_pool2d: data has dtype bool");
}

}  // namespace
}  // namespace kiln
