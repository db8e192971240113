// nn.conv2d and nn.conv2d_transpose against hand-computed values and against
// deliberately naive direct implementations written here (double accumulation,
// one loop per index, bounds checks instead of padded copies).
#include "op_test_util.h"

namespace kiln {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::expect_error;
using testing::random_tensor;
using testing::run1;

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> strides, padding, dilation;  // padding: top, left, bottom, right
  int64_t groups;
};

Attrs conv_attrs(const ConvCase& c) {
  return {{"strides", c.strides}, {"padding", c.padding}, {"dilation", c.dilation}, {"groups", c.groups}};
}

double at4(const Tensor& t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return t.get_as_double(((a * t.dim(1) + b) * t.dim(2) + c) * t.dim(3) + d);
}

// One output element of a direct convolution.
double naive_conv_at(const Tensor& x, const Tensor& w, const ConvCase& c, int64_t n, int64_t o, int64_t oy,
                     int64_t ox) {
  int64_t cin_g = w.dim(1), og = w.dim(0) / c.groups, g = o / og;
  double sum = 0;
  for (int64_t i = 0; i < cin_g; ++i)
    for (int64_t ky = 0; ky < w.dim(2); ++ky)
      for (int64_t kx = 0; kx < w.dim(3); ++kx) {
        int64_t iy = oy * c.strides[0] - c.padding[0] + ky * c.dilation[0];
        int64_t ix = ox * c.strides[1] - c.padding[1] + kx * c.dilation[1];
        if (iy < 0 || iy >= x.dim(2) || ix < 0 || ix >= x.dim(3)) continue;
        sum += at4(x, n, g * cin_g + i, iy, ix) * at4(w, o, i, ky, kx);
      }
  return sum;
}

// The 7-loop direct convolution.
std::vector<double> naive_conv(const Tensor& x, const Tensor& w, const ConvCase& c, Shape* out_shape) {
  int64_t oh =
      (x.dim(2) + c.padding[0] + c.padding[2] - c.dilation[0] * (w.dim(2) - 1) - 1) / c.strides[0] + 1;
  int64_t ow =
      (x.dim(3) + c.padding[1] + c.padding[3] - c.dilation[1] * (w.dim(3) - 1) - 1) / c.strides[1] + 1;
  *out_shape = {x.dim(0), w.dim(0), oh, ow};
  std::vector<double> out;
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t o = 0; o < w.dim(0); ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) out.push_back(naive_conv_at(x, w, c, n, o, oy, ox));
  return out;
}

const std::vector<ConvCase> kConvCases = {
    {{1, 1, 5, 5}, {1, 1, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
    {{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
    {{1, 3, 9, 8}, {5, 3, 3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 1}, 1},   // strides, asymmetric padding
    {{1, 2, 10, 9}, {3, 2, 3, 3}, {1, 2}, {2, 1, 0, 3}, {2, 3}, 1},  // dilation
    {{2, 4, 6, 6}, {6, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},   // groups
    {{1, 5, 8, 7}, {5, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 5},   // depthwise
    {{1, 4, 6, 5}, {8, 1, 3, 3}, {1, 1}, {0, 1, 2, 0}, {1, 2}, 4},   // depthwise, multiplier 2
    {{1, 6, 5, 5}, {7, 6, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},   // 1x1
    {{1, 2, 5, 21}, {9, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},  // full column blocks and a tail
    {{1, 3, 6, 40}, {4, 3, 3, 3}, {2, 3}, {1, 2, 0, 1}, {1, 2}, 1},  // strided blocks
};

TEST(NnConv2d, HandComputed) {
  Tensor x = Tensor::from_floats({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = Tensor::from_floats({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor y = run1("nn.conv2d", {x, w});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  expect_equal(y, {12, 16, 24, 28});
  // Symmetric padding of 1 in the [h, w] form, stride 2: corners of the padded sums.
  Tensor z = run1("nn.conv2d", {x, w},
                  {{"padding", std::vector<int64_t>{1, 1}}, {"strides", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(z.shape(), (Shape{1, 1, 2, 2}));
  expect_equal(z, {1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9});
}

TEST(NnConv2d, Float32MatchesNaive) {
  uint32_t seed = 1;
  for (const ConvCase& c : kConvCases) {
    Tensor x = random_tensor(c.x, DType::Float32, seed++);
    Tensor w = random_tensor(c.w, DType::Float32, seed++);
    Shape shape;
    std::vector<double> want = naive_conv(x, w, c, &shape);
    Tensor y = run1("nn.conv2d", {x, w}, conv_attrs(c));
    EXPECT_EQ(y.shape(), shape) << shape_str(c.x);
    EXPECT_EQ(y.dtype(), DType::Float32);
    expect_close(y, want, 1e-5, shape_str(c.x) + " * " + shape_str(c.w));
  }
}

TEST(NnConv2d, Int8IsExactInInt32) {
  uint32_t seed = 100;
  for (const ConvCase& c : kConvCases) {
    Tensor x = random_tensor(c.x, DType::Int8, seed++);
    Tensor w = random_tensor(c.w, DType::Int8, seed++);
    Shape shape;
    std::vector<double> want = naive_conv(x, w, c, &shape);
    Tensor y = run1("nn.conv2d", {x, w}, conv_attrs(c));
    EXPECT_EQ(y.dtype(), DType::Int32);
    EXPECT_EQ(y.shape(), shape);
    expect_equal(y, want, shape_str(c.x));
  }
  // uint8 data with int8 weight, widened to int64 on request.
  const ConvCase& c = kConvCases[2];
  Tensor x = random_tensor(c.x, DType::UInt8, 7);
  Tensor w = random_tensor(c.w, DType::Int8, 8);
  Attrs a = conv_attrs(c);
  a.set("out_dtype", std::string("int64"));
  Tensor y = run1("nn.conv2d", {x, w}, a);
  EXPECT_EQ(y.dtype(), DType::Int64);
  Shape shape;
  expect_equal(y, naive_conv(x, w, c, &shape));
}

// Zero-point-shifted 8-bit values (-255..255, ONNX ConvInteger) as int32
// operands, alone or mixed with 8-bit ones, accumulate exactly in int32.
Tensor shifted_uint8(const Shape& shape, int64_t zero_point, uint32_t seed) {
  Tensor u = random_tensor(shape, DType::UInt8, seed);
  Tensor t = Tensor::empty(shape, DType::Int32);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, u.get_as_double(i) - zero_point);
  return t;
}

TEST(NnConv2d, Int32OperandsAreExact) {
  uint32_t seed = 500;
  for (const ConvCase& c : kConvCases) {
    Tensor x = shifted_uint8(c.x, 255, seed++);
    Tensor w = shifted_uint8(c.w, 0, seed++);
    Shape shape;
    std::vector<double> want = naive_conv(x, w, c, &shape);
    Tensor y = run1("nn.conv2d", {x, w}, conv_attrs(c));
    EXPECT_EQ(y.dtype(), DType::Int32);
    EXPECT_EQ(y.shape(), shape);
    expect_equal(y, want, "int32 " + shape_str(c.x));
    Tensor w8 = random_tensor(c.w, DType::Int8, seed++);
    expect_equal(run1("nn.conv2d", {x, w8}, conv_attrs(c)), naive_conv(x, w8, c, &shape),
                 "int32 * int8 " + shape_str(c.x));
  }
  // By hand: (x - 1) for x = 2..10 padded with zeros, a 2x2 box of ones
  // (what ONNX ConvInteger with x_zero_point 1 and pads 1 computes).
  Tensor x = Tensor::from_ints({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, DType::Int32);
  Tensor w = Tensor::from_ints({1, 1, 2, 2}, {1, 1, 1, 1}, DType::UInt8);
  Tensor y = run1("nn.conv2d", {x, w}, {{"padding", std::vector<int64_t>{1, 1}}});
  expect_equal(y, {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9});
}

TEST(NnConv2d, Float16ComputesInFloat32) {
  const ConvCase& c = kConvCases[1];
  Tensor x = random_tensor(c.x, DType::Float16, 21);
  Tensor w = random_tensor(c.w, DType::Float16, 22);
  Shape shape;
  std::vector<double> want = naive_conv(x, w, c, &shape);  // reads the float16 values exactly
  Tensor y = run1("nn.conv2d", {x, w}, conv_attrs(c));
  EXPECT_EQ(y.dtype(), DType::Float16);
  expect_close(y, want, 1e-3);  // one float16 rounding of the result
  Attrs a = conv_attrs(c);
  a.set("out_dtype", std::string("float32"));
  Tensor y32 = run1("nn.conv2d", {x, w}, a);
  EXPECT_EQ(y32.dtype(), DType::Float32);
  expect_close(y32, want, 1e-5);
}

TEST(NnConv2d, LargeImageSpotChecks) {
  ConvCase c{{1, 16, 320, 320}, {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1};
  Tensor x = random_tensor(c.x, DType::Float32, 5);
  Tensor w = random_tensor(c.w, DType::Float32, 6);
  Tensor y = run1("nn.conv2d", {x, w}, conv_attrs(c));
  ASSERT_EQ(y.shape(), (Shape{1, 16, 320, 320}));
  const int64_t spots[][3] = {{0, 0, 0},      {3, 0, 319},  {7, 319, 0},
                              {15, 319, 319}, {9, 160, 77}, {1, 33, 250}};
  for (const auto& s : spots) {
    double want = naive_conv_at(x, w, c, 0, s[0], s[1], s[2]);
    double got = y.get_as_double((s[0] * 320 + s[1]) * 320 + s[2]);
    EXPECT_NEAR(got, want, 1e-4) << s[0] << "," << s[1] << "," << s[2];
  }
}

TEST(NnConv2d, Errors) {
  Tensor x = Tensor::zeros({1, 3, 8, 8}, DType::Float32);
  expect_error(
      [&] {
        run1("nn.conv2d", {x, Tensor::zeros({2, 4, 3, 3}, DType::Float32)});
      },
      "nn.conv2d: weight has 4 input channels per group but data has 3 channels (groups=1)");
  expect_error(
      [&] {
        run1("nn.conv2d", {x, Tensor::zeros({2, 3, 9, 3}, DType::Float32)});
      },
      "nn.conv2d: the dilated kernel (9x3) is larger than the padded input (8x8)");
  expect_error(
      [&] {
        run1("nn.conv2d", {x, Tensor::zeros({2, 1, 3, 3}, DType::Float32)}, {{"groups", int64_t{2}}});
      },
      "nn.conv2d: data has 3 channels, not divisible by groups=2");
  expect_error(
      [&] {
        run1("nn.conv2d", {x, Tensor::zeros({2, 3, 3, 3}, DType::Float32)},
             {{"strides", std::vector<int64_t>{1}}});
      },
      "nn.conv2d: attribute 'strides' must have 2 values, got [1]");
  expect_error(
      [&] {
        run1("nn.conv2d", {x, Tensor::zeros({2, 3, 3, 3}, DType::Float32)},
             {{"padding", std::vector<int64_t>{1, 1, 1}}});
      },
      "nn.conv2d: attribute 'padding' must have 2 values [h, w] or 4 values");
  expect_error(
      [&] {
        run1("nn.conv2d", {x, Tensor::zeros({2, 3, 3, 3}, DType::Float32)},
             {{"out_dtype", std::string("int32")}});
      },
      "nn.conv2d: attribute 'out_dtype' = \"int32\" is not allowed for float32 inputs");
  expect_error(
      [&] {
        run1("nn.conv2d", {x, Tensor::zeros({2, 3, 3, 3}, DType::Int8)});
      },
      "nn.conv2d: data has dtype float32 but weight has dtype int8");
  expect_error(
      [&] {
        run1("nn.conv2d",
             {Tensor::zeros({3, 8, 8}, DType::Float32), Tensor::zeros({2, 3, 3, 3}, DType::Float32)});
      },
      "nn.conv2d: data must be 4-D (N, C, H, W), got shape (3, 8, 8)");
}

// ---- conv2d_transpose -----------------------------------------------------

struct ConvTCase {
  Shape x, w;  // w: (C_in, C_out / groups, kh, kw)
  std::vector<int64_t> strides, padding, dilation, output_padding;
  int64_t groups;
};

// Every input element scatters x * w into the (uncropped) output.
std::vector<double> naive_conv_t(const Tensor& x, const Tensor& w, const ConvTCase& c, Shape* out_shape) {
  int64_t kh = w.dim(2), kw = w.dim(3), og = w.dim(1), cg = x.dim(1) / c.groups;
  int64_t oh = (x.dim(2) - 1) * c.strides[0] - c.padding[0] - c.padding[2] + c.dilation[0] * (kh - 1) +
               c.output_padding[0] + 1;
  int64_t ow = (x.dim(3) - 1) * c.strides[1] - c.padding[1] - c.padding[3] + c.dilation[1] * (kw - 1) +
               c.output_padding[1] + 1;
  int64_t o = og * c.groups;
  *out_shape = {x.dim(0), o, oh, ow};
  std::vector<double> out(static_cast<size_t>(x.dim(0) * o * oh * ow), 0.0);
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t ci = 0; ci < x.dim(1); ++ci)
      for (int64_t iy = 0; iy < x.dim(2); ++iy)
        for (int64_t ix = 0; ix < x.dim(3); ++ix)
          for (int64_t j = 0; j < og; ++j)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t y = iy * c.strides[0] - c.padding[0] + ky * c.dilation[0];
                int64_t xx = ix * c.strides[1] - c.padding[1] + kx * c.dilation[1];
                if (y < 0 || y >= oh || xx < 0 || xx >= ow) continue;
                int64_t oc = (ci / cg) * og + j;
                out[static_cast<size_t>(((n * o + oc) * oh + y) * ow + xx)] +=
                    at4(x, n, ci, iy, ix) * at4(w, ci, j, ky, kx);
              }
  return out;
}

const std::vector<ConvTCase> kConvTCases = {
    {{1, 1, 2, 2}, {1, 1, 2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, 1},
    {{2, 3, 4, 5}, {3, 2, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1},
    {{1, 2, 5, 4}, {2, 3, 3, 2}, {2, 3}, {0, 1, 2, 0}, {1, 1}, {0, 2}, 1},  // asymmetric padding
    {{1, 2, 4, 4}, {2, 2, 3, 3}, {1, 2}, {1, 0, 0, 1}, {2, 2}, {1, 1}, 1},  // dilation
    {{1, 4, 3, 3}, {4, 3, 2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0}, 2},  // groups
    {{1, 3, 4, 4}, {3, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 3},  // depthwise
};

TEST(NnConv2dTranspose, HandComputed) {
  Tensor x = Tensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = Tensor::from_floats({1, 1, 2, 2}, {1, 10, 100, 1000});
  Tensor y = run1("nn.conv2d_transpose", {x, w}, {{"strides", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  // Stride 2 with a 2x2 kernel: each input places a scaled copy of w, no overlap.
  expect_equal(y, {1, 10, 2, 20, 100, 1000, 200, 2000, 3, 30, 4, 40, 300, 3000, 400, 4000});
}

TEST(NnConv2dTranspose, MatchesNaiveScatter) {
  uint32_t seed = 40;
  for (const ConvTCase& c : kConvTCases) {
    Attrs a = {{"strides", c.strides},
               {"padding", c.padding},
               {"dilation", c.dilation},
               {"output_padding", c.output_padding},
               {"groups", c.groups}};
    Tensor x = random_tensor(c.x, DType::Float32, seed++);
    Tensor w = random_tensor(c.w, DType::Float32, seed++);
    Shape shape;
    std::vector<double> want = naive_conv_t(x, w, c, &shape);
    Tensor y = run1("nn.conv2d_transpose", {x, w}, a);
    EXPECT_EQ(y.shape(), shape) << shape_str(c.x);
    expect_close(y, want, 1e-5, shape_str(c.x) + " * " + shape_str(c.w));
    // The same case in int8 is exact.
    Tensor xi = random_tensor(c.x, DType::Int8, seed++);
    Tensor wi = random_tensor(c.w, DType::Int8, seed++);
    Tensor yi = run1("nn.conv2d_transpose", {xi, wi}, a);
    EXPECT_EQ(yi.dtype(), DType::Int32);
    expect_equal(yi, naive_conv_t(xi, wi, c, &shape), "int8 " + shape_str(c.x));
  }
}

TEST(NnConv2dTranspose, Errors) {
  Tensor x = Tensor::zeros({1, 3, 4, 4}, DType::Float32);
  expect_error(
      [&] {
        run1("nn.conv2d_transpose", {x, Tensor::zeros({2, 2, 3, 3}, DType::Float32)});
      },
      "nn.conv2d_transpose: weight has 2 input channels but data has 3 channels");
  expect_error(
      [&] {
        run1("nn.conv2d_transpose", {x, Tensor::zeros({3, 2, 3, 3}, DType::Float32)},
             {{"output_padding", std::vector<int64_t>{1, 0}}});
      },
      "nn.conv2d_transpose: attribute 'output_padding' = [1, 0] must be smaller than the stride or the "
      "dilation");
  expect_error(
      [&] {
        run1("nn.conv2d_transpose", {x, Tensor::zeros({3, 2, 1, 1}, DType::Float32)},
             {{"padding", std::vector<int64_t>{2, 2, 2, 2}}});
      },
      "leaves an empty output");
}

// nn.winograd_weight by hand: kernel rows (1, 2, 3) in every column give
// F(2, 3)'s phases g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2.
TEST(NnWinograd, WeightTransformByHand) {
  Tensor w = Tensor::from_floats({1, 1, 3, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3});
  Tensor u = run1("nn.winograd_weight", {w}, {{"tile_rows", int64_t{2}}});
  EXPECT_EQ(u.shape(), (Shape{1, 1, 4, 3}));
  expect_equal(u, {1, 1, 1, 3, 3, 3, 1, 1, 1, 3, 3, 3});
}

// conv2d_winograd(x, winograd_weight(w, m)) is nn.conv2d(x, w) for F(2, 3)
// and F(4, 3): odd rows (a last tile only partly stored), asymmetric,
// wider and no padding, two images, one row.
TEST(NnWinograd, MatchesConv2d) {
  struct Case {
    Shape x;
    int64_t out_channels;
    std::vector<int64_t> padding;
  };
  const Case cases[] = {{{1, 3, 8, 8}, 2, {1, 1, 1, 1}},
                        {{2, 4, 7, 9}, 3, {0, 1, 2, 1}},
                        {{1, 2, 11, 5}, 4, {0, 0, 0, 0}},
                        {{1, 5, 6, 6}, 2, {2, 2, 2, 2}},
                        {{1, 2, 3, 12}, 3, {0, 1, 0, 1}}};
  uint32_t seed = 40;
  for (const Case& c : cases)
    for (int64_t m : {2, 4}) {
      Tensor x = random_tensor(c.x, DType::Float32, seed++);
      Tensor w = random_tensor({c.out_channels, c.x[1], 3, 3}, DType::Float32, seed++);
      Tensor want = run1("nn.conv2d", {x, w}, {{"padding", c.padding}});
      Tensor u = run1("nn.winograd_weight", {w}, {{"tile_rows", m}});
      Tensor y = run1("nn.conv2d_winograd", {x, u}, {{"padding", c.padding}, {"tile_rows", m}});
      EXPECT_EQ(y.shape(), want.shape()) << shape_str(c.x);
      expect_close(y, testing::values(want), 1e-5, shape_str(c.x) + " F(" + std::to_string(m) + ", 3)");
    }
}

// In channel blocks: winograd_weight of a blocked weight is the blocked
// transformed weight (the two transforms commute), and conv2d_winograd of
// blocked data by it is the blocked nn.conv2d, for blocks of 4 and 8, two
// images, F(2, 3) and F(4, 3).
TEST(NnWinograd, BlockedFormIsTheBlockedConv) {
  uint32_t seed = 60;
  for (int64_t block : {4, 8})
    for (int64_t m : {2, 4}) {
      const std::string what = "block " + std::to_string(block) + ", F(" + std::to_string(m) + ", 3)";
      Tensor x = random_tensor({2, 2 * block, 7, 9}, DType::Float32, seed++);
      Tensor w = random_tensor({block, 2 * block, 3, 3}, DType::Float32, seed++);
      const Attrs blocks{{"in_block", block}, {"out_block", block}};
      const std::vector<int64_t> padding = {1, 0, 2, 1};
      Tensor u = run1("nn.winograd_weight", {run1("nn.block_conv_weight", {w}, blocks)}, {{"tile_rows", m}});
      Tensor want_u =
          run1("nn.block_conv_weight", {run1("nn.winograd_weight", {w}, {{"tile_rows", m}})}, blocks);
      EXPECT_EQ(u.shape(), (Shape{1, 2, m + 2, 3, block, block})) << what;
      expect_close(u, testing::values(want_u), 1e-6, what + ": weight");
      Tensor y = run1("nn.conv2d_winograd", {run1("nn.block_channels", {x}, {{"block", block}}), u},
                      {{"padding", padding}, {"tile_rows", m}});
      Tensor want =
          run1("nn.block_channels", {run1("nn.conv2d", {x, w}, {{"padding", padding}})}, {{"block", block}});
      EXPECT_EQ(y.shape(), want.shape()) << what;
      expect_close(y, testing::values(want), 1e-5, what);
    }
}

TEST(NnWinograd, BadOperandsAndAttributesAreErrors) {
  Tensor w = random_tensor({2, 3, 3, 3}, DType::Float32, 1),
         x = random_tensor({1, 3, 6, 6}, DType::Float32, 2);
  expect_error(
      [&] {
        run1("nn.winograd_weight", {w}, {{"tile_rows", int64_t{3}}});
      },
      "nn.winograd_weight: attribute 'tile_rows' = 3 must be 2 or 4");
  expect_error(
      [&] {
        run1("nn.winograd_weight", {random_tensor({2, 3, 5, 5}, DType::Float32, 3)},
             {{"tile_rows", int64_t{2}}});
      },
      "weight must be a 3x3 kernel (K, C, 3, 3), got shape (2, 3, 5, 5)");
  Tensor u = run1("nn.winograd_weight", {w}, {{"tile_rows", int64_t{2}}});
  expect_error(
      [&] {
        run1("nn.conv2d_winograd", {x, u}, {{"tile_rows", int64_t{4}}});
      },
      "transformed weight (2, 3, 4, 3) does not fit data (1, 3, 6, 6) and tile_rows 4: expected (K, 3, 6, "
      "3)");
  expect_error(
      [&] {
        run1("nn.conv2d_winograd", {random_tensor({1, 3, 2, 6}, DType::Float32, 4), u},
             {{"tile_rows", int64_t{2}}});
      },
      "is smaller than the 3x3 kernel");
  expect_error(
      [&] {
        run1("nn.conv2d_winograd", {random_tensor({1, 3, 6}, DType::Float32, 5), u},
             {{"tile_rows", int64_t{2}}});
      },
      "data must be 4-D (N, C, H, W) or 5-D (N, C / c, H, W, c)");
  expect_error(
      [&] {
        run1("nn.winograd_weight", {random_tensor({2, 3, 3, 3, 4}, DType::Float32, 9)},
             {{"tile_rows", int64_t{2}}});
      },
      "weight must be 4-D (K, C, 3, 3) or 6-D (K / ob, C / ib, 3, 3, ib, ob), got shape (2, 3, 3, 3, 4)");
  // Blocked data needs the blocked transformed weight, of its block.
  Tensor xb = random_tensor({1, 2, 6, 6, 4}, DType::Float32, 6);
  expect_error(
      [&] {
        run1("nn.conv2d_winograd", {xb, u}, {{"tile_rows", int64_t{2}}});
      },
      "transformed weight must be 6-D (K / ob, C / c, tile_rows + 2, 3, c, ob) for 5-D data, got shape (2, "
      "3, 4, "
      "3)");
  expect_error(
      [&] {
        run1("nn.conv2d_winograd", {xb, random_tensor({1, 4, 4, 3, 2, 8}, DType::Float32, 7)},
             {{"tile_rows", int64_t{2}}});
      },
      "its input blocks must be the data's blocks of 4");
  expect_error(
      [&] {
        run1("nn.conv2d_winograd", {xb, random_tensor({1, 2, 6, 3, 4, 8}, DType::Float32, 8)},
             {{"tile_rows", int64_t{2}}});
      },
      "transformed weight (1, 2, 6, 3, 4, 8) does not fit data (1, 2, 6, 6, 4) and tile_rows 2: expected (K "
      "/ "
      "ob, 2, 4, 3, 4, ob)");
}

}  // namespace
}  // namespace kiln
