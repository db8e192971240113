// image.resize2d against hand-computed small cases (several are the examples
// of the ONNX Resize operator documentation) and a naive implementation
// written here the way the ONNX definition reads: per output pixel, a 1-D
// interpolation along W for each needed row, then one along H, with the n
// nearest neighbours found by sorting an edge-padded index range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "ir/stable_sort.h"
#include "kiln/runtime/error.h"
#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

Tensor resize(const Tensor& x, std::vector<int64_t> size, Attrs attrs = {}) {
  attrs.set("size", size);
  return run_op(*find_op("image.resize2d"), {x}, attrs).at(0);
}

Attrs modes(const std::string& method, const std::string& ctm = "half_pixel") {
  return {{"method", method}, {"coordinate_transformation_mode", ctm}};
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// ---- hand-computed -----------------------------------------------------------

TEST(Resize, NearestDownsample) {
  // ONNX example: (1, 1, 2, 4) -> (1, 1, 1, 2) gives [1, 3].
  Tensor x = tensor_of({1, 1, 2, 4}, DType::Float32, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = resize(x, {1, 2});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 3}));
}

TEST(Resize, NearestUpsampleTiesPreferFloor) {
  // ONNX example: (2, 2) -> (7, 8); rows 0-3 come from input row 0 because
  // output row 3 maps to exactly 0.5 and ties go down.
  Tensor x = tensor_of({1, 1, 2, 2}, DType::Float32, {1, 2, 3, 4});
  Tensor y = resize(x, {7, 8});
  std::vector<double> want;
  for (int r = 0; r < 7; ++r)
    for (int c = 0; c < 8; ++c) want.push_back((r < 4 ? 1 : 3) + (c < 4 ? 0 : 1));
  EXPECT_EQ(values(y), want);
}

TEST(Resize, NearestRoundingMethods) {
  // asymmetric, W 4 -> 3: x = 0, 4/3, 8/3.
  Tensor x = tensor_of({1, 1, 1, 4}, DType::Float32, {10, 20, 30, 40});
  auto run = [&](const std::string& rounding) {
    Attrs a = modes("nearest", "asymmetric");
    a.set("rounding_method", rounding);
    return values(resize(x, {1, 3}, a));
  };
  EXPECT_EQ(run("round_prefer_floor"), (std::vector<double>{10, 20, 40}));
  EXPECT_EQ(run("round_prefer_ceil"), (std::vector<double>{10, 20, 40}));
  EXPECT_EQ(run("floor"), (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(run("ceil"), (std::vector<double>{10, 30, 40}));
  // asymmetric, W 3 -> 6: x = 0, .5, 1, 1.5, 2, 2.5 (ties; 3 clamps to 2).
  Tensor z = tensor_of({1, 1, 1, 3}, DType::Float32, {10, 20, 30});
  auto run2 = [&](const std::string& rounding) {
    Attrs a = modes("nearest", "asymmetric");
    a.set("rounding_method", rounding);
    return values(resize(z, {1, 6}, a));
  };
  EXPECT_EQ(run2("round_prefer_floor"), (std::vector<double>{10, 10, 20, 20, 30, 30}));
  EXPECT_EQ(run2("round_prefer_ceil"), (std::vector<double>{10, 20, 20, 30, 30, 30}));
  EXPECT_EQ(run2("floor"), (std::vector<double>{10, 10, 20, 20, 30, 30}));
  EXPECT_EQ(run2("ceil"), (std::vector<double>{10, 20, 20, 30, 30, 30}));
}

TEST(Resize, NearestCoordinateModes) {
  Tensor x = tensor_of({1, 1, 1, 4}, DType::Float32, {10, 20, 30, 40});
  // align_corners, 4 -> 3: x = 0, 1.5, 3 -> 0, 1 (tie down), 3.
  EXPECT_EQ(values(resize(x, {1, 3}, modes("nearest", "align_corners"))), (std::vector<double>{10, 20, 40}));
  // half_pixel, 4 -> 3: x = (o + .5) * 4/3 - .5 = 1/6, 1.5, 17/6 -> 0, 1, 3.
  EXPECT_EQ(values(resize(x, {1, 3}, modes("nearest", "half_pixel"))), (std::vector<double>{10, 20, 40}));
  // pytorch_half_pixel with one output column maps to 0; half_pixel to 1.5 -> 1.
  EXPECT_EQ(values(resize(x, {1, 1}, modes("nearest", "pytorch_half_pixel"))), (std::vector<double>{10}));
  EXPECT_EQ(values(resize(x, {1, 1}, modes("nearest", "half_pixel"))), (std::vector<double>{20}));
  // tf_half_pixel_for_nn, 4 -> 3: x = (o + .5) * 4/3 = 2/3, 2, 10/3 -> 1, 2, 3.
  EXPECT_EQ(values(resize(x, {1, 3}, modes("nearest", "tf_half_pixel_for_nn"))),
            (std::vector<double>{20, 30, 40}));
}

TEST(Resize, TfCropAndResizeExtrapolatesOutsideTheImage) {
  // W 4, roi x from 0.5 to 1.5 of (in - 1) = 3, out 3: x = 1.5, 3, 4.5. The
  // last is past the image (extrapolation_value 9); 1.5 is a tie (prefer floor).
  Tensor x = tensor_of({1, 1, 1, 4}, DType::Float32, {10, 20, 30, 40});
  Attrs a = modes("nearest", "tf_crop_and_resize");
  a.set("roi", std::vector<double>{0, 0.5, 1, 1.5});
  a.set("extrapolation_value", 9.0);
  EXPECT_EQ(values(resize(x, {1, 3}, a)), (std::vector<double>{20, 40, 9}));
  // Linear at x = 1.5 is the mean of 20 and 30. One output column samples the
  // crop's center (0.5 + 1.5) / 2 * 3 = 3.
  a.set("method", std::string("linear"));
  EXPECT_EQ(values(resize(x, {1, 3}, a)), (std::vector<double>{25, 40, 9}));
  EXPECT_EQ(values(resize(x, {1, 1}, a)), (std::vector<double>{40}));
  // The roi is required with tf_crop_and_resize and refused without it.
  expect_error([&] { resize(x, {1, 3}, modes("nearest", "tf_crop_and_resize")); }, "attribute 'roi' must be");
  Attrs stray = modes("nearest", "half_pixel");
  stray.set("roi", std::vector<double>{0, 0, 1, 1});
  expect_error([&] { resize(x, {1, 3}, stray); }, "attribute 'roi' must be");
}

TEST(Resize, LinearHalfPixel) {
  // ONNX example: (2, 2) upsampled by 2 with half_pixel.
  Tensor x = tensor_of({1, 1, 2, 2}, DType::Float32, {1, 2, 3, 4});
  Tensor y = resize(x, {4, 4}, modes("linear"));
  expect_near_all(values(y), {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4},
                  1e-6);
}

TEST(Resize, LinearAlignCornersAndAsymmetric) {
  Tensor x = tensor_of({1, 1, 2, 2}, DType::Float32, {1, 2, 3, 4});
  double t = 1.0 / 3, u = 2.0 / 3;
  expect_near_all(values(resize(x, {4, 4}, modes("linear", "align_corners"))),
                  {1, 1 + t, 1 + u, 2, 1 + u, 2, 2 + t, 2 + u, 2 + t, 2 + u, 3, 3 + t, 3, 3 + t, 3 + u, 4},
                  1e-6);
  // asymmetric: x = o / 2 -> 0, .5, 1, 1.5 (clamped at the edge).
  expect_near_all(values(resize(x, {4, 4}, modes("linear", "asymmetric"))),
                  {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4}, 1e-6);
}

TEST(Resize, LinearPytorchHalfPixelDownsample) {
  // ONNX example: 4x4 of 1..16 -> (3, 1).
  std::vector<double> v;
  for (int i = 1; i <= 16; ++i) v.push_back(i);
  Tensor y =
      resize(tensor_of({1, 1, 4, 4}, DType::Float32, v), {3, 1}, modes("linear", "pytorch_half_pixel"));
  expect_near_all(values(y), {1.6666666, 7, 12.333333}, 1e-5);
}

TEST(Resize, GivenScaleMapsCoordinates) {
  // Width 4 -> 2 with scale 0.6 (floor(2.4) = 2), so out / in = 0.5 differs from it.
  Tensor x = tensor_of({1, 1, 1, 4}, DType::Float32, {1, 2, 3, 4});
  auto with_scale = [&](const std::string& ctm) {
    Attrs a = modes("linear", ctm);
    a.set("scale", std::vector<double>{1.0, 0.6});
    return values(resize(x, {1, 2}, a));
  };
  // half_pixel: x = (o + 0.5) / 0.6 - 0.5 = 1/3 and 2 (the ratio would give 0.5 and 2.5).
  expect_near_all(with_scale("half_pixel"), {1 + 1.0 / 3, 3}, 1e-6);
  expect_near_all(values(resize(x, {1, 2}, modes("linear"))), {1.5, 3.5}, 1e-6);
  // asymmetric: x = o / 0.6 = 0 and 5/3.
  expect_near_all(with_scale("asymmetric"), {1, 1 + 5.0 / 3}, 1e-6);
  // align_corners: x = o * (4 - 1) / (2.4 - 1), the unrounded length.
  expect_near_all(with_scale("align_corners"), {1, 1 + 3 / 1.4}, 1e-6);
  Attrs bad = modes("linear");
  bad.set("scale", std::vector<double>{0.6});
  expect_error(
      [&] {
        resize(x, {1, 2}, bad);
      },
      "image.resize2d: attribute 'scale' must be [] or [scale_h, scale_w] with both finite and > 0");
}

TEST(Resize, CubicHandComputed) {
  // W 4 -> 8, asymmetric: output 1 maps to x = 0.5, t = 0.5, A = -0.75:
  // weights (-0.09375, 0.59375, 0.59375, -0.09375) on taps -1, 0, 1, 2.
  Tensor x = tensor_of({1, 1, 1, 4}, DType::Float32, {1, 2, 4, 8});
  Tensor y = resize(x, {1, 8}, modes("cubic", "asymmetric"));
  // Tap -1 reads the edge (1): -0.09375 + 0.59375 + 1.1875 - 0.375 = 1.3125.
  EXPECT_NEAR(values(y)[1], 1.3125, 1e-6);
  EXPECT_NEAR(values(y)[0], 1.0, 1e-6);  // integral x: the input itself
  EXPECT_NEAR(values(y)[2], 2.0, 1e-6);
  // exclude_outside drops tap -1 and renormalises: 1.40625 / 1.09375 = 9 / 7.
  Attrs ex = modes("cubic", "asymmetric");
  ex.set("exclude_outside", int64_t{1});
  EXPECT_NEAR(values(resize(x, {1, 8}, ex))[1], 9.0 / 7.0, 1e-6);
  // cubic_alpha = -0.5: weights (-0.0625, 0.5625, 0.5625, -0.0625):
  // -0.0625 + 0.5625 + 1.125 - 0.25 = 1.375.
  Attrs a5 = modes("cubic", "asymmetric");
  a5.set("cubic_alpha", -0.5);
  EXPECT_NEAR(values(resize(x, {1, 8}, a5))[1], 1.375, 1e-6);
}

TEST(Resize, CubicOnnxExampleCorner) {
  // ONNX example: 4x4 of 1..16 upsampled to 8x8, cubic, half_pixel.
  // Output (0, 0) maps to x = y = -0.25: t = 0.75, taps -2, -1, 0, 1
  // (edge-clamped to 0, 0, 0, 1) with weights -0.03515625, 0.26171875,
  // 0.87890625, -0.10546875 (sum 1). Along a row of step 1 that is
  // 1 - 0.10546875; along a column of step 4, 1 - 4 * 0.10546875; separably
  // 1 - 5 * 0.10546875 = 0.47265625, the documented value.
  std::vector<double> v;
  for (int i = 1; i <= 16; ++i) v.push_back(i);
  Tensor y = resize(tensor_of({1, 1, 4, 4}, DType::Float32, v), {8, 8}, modes("cubic"));
  EXPECT_NEAR(values(y)[0], 0.47265625, 1e-6);
}

TEST(Resize, IntegerDtypes) {
  // Nearest is an exact copy for int8.
  Tensor i8 = tensor_of({1, 1, 1, 2}, DType::Int8, {-128, 127});
  Tensor n = resize(i8, {1, 4});
  EXPECT_EQ(n.dtype(), DType::Int8);
  EXPECT_EQ(values(n), (std::vector<double>{-128, -128, 127, 127}));
  // Linear rounds half to even: [0, 1] at x = .5 is 0.5 -> 0; [1, 2] -> 1.5 -> 2.
  Tensor a = tensor_of({1, 1, 1, 2}, DType::UInt8, {0, 1});
  EXPECT_EQ(values(resize(a, {1, 4}, modes("linear", "asymmetric"))), (std::vector<double>{0, 0, 1, 1}));
  Tensor b = tensor_of({1, 1, 1, 2}, DType::Int8, {1, 2});
  EXPECT_EQ(values(resize(b, {1, 4}, modes("linear", "asymmetric"))), (std::vector<double>{1, 2, 2, 2}));
  // -3 * 0.75 + 4 * 0.25 = -1.25 -> -1.
  Tensor c = tensor_of({1, 1, 1, 2}, DType::Int8, {-3, 4});
  EXPECT_EQ(values(resize(c, {1, 4}, modes("linear"))), (std::vector<double>{-3, -1, 2, 4}));
  // Cubic overshoot saturates: a step 0, 0, 255, 255 rings above 255 and below 0.
  Tensor s = tensor_of({1, 1, 1, 4}, DType::UInt8, {0, 0, 255, 255});
  Tensor f = tensor_of({1, 1, 1, 4}, DType::Float32, {0, 0, 255, 255});
  auto sv = values(resize(s, {1, 8}, modes("cubic")));
  auto fv = values(resize(f, {1, 8}, modes("cubic")));
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(sv[i], std::min(255.0, std::max(0.0, std::nearbyint(fv[i])))) << i;
  EXPECT_LT(*std::min_element(fv.begin(), fv.end()), 0.0);
  EXPECT_GT(*std::max_element(fv.begin(), fv.end()), 255.0);
}

// ---- naive implementation ------------------------------------------------------

double naive_coord(const std::string& ctm, int64_t o, int64_t in, int64_t out) {
  double scale = double(out) / double(in);
  if (ctm == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (ctm == "pytorch_half_pixel") return out > 1 ? (o + 0.5) / scale - 0.5 : 0;
  if (ctm == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  if (ctm == "align_corners") return out == 1 ? 0 : o * double(in - 1) / double(out - 1);
  return o / scale;
}

// One interpolation along a line of data at coordinate x.
double naive_1d(const std::vector<double>& data, double x, const Attrs& a) {
  const std::string method = a.get_string("method");
  double A = a.get_float("cubic_alpha");
  int64_t in = static_cast<int64_t>(data.size());
  double xf = std::floor(x);
  double ratio = x == xf ? 1.0 : x - xf;  // in (0, 1]: prefer the left pixel
  std::vector<double> c;
  if (method == "nearest") {
    std::string r = a.get_string("rounding_method");
    if (x == xf)
      c = {0, 1};
    else if (r == "round_prefer_floor")
      c = {double(ratio <= 0.5), double(ratio > 0.5)};
    else if (r == "round_prefer_ceil")
      c = {double(ratio < 0.5), double(ratio >= 0.5)};
    else if (r == "floor")
      c = {1, 0};
    else
      c = {0, 1};
  } else if (method == "linear") {
    c = {1 - ratio, ratio};
  } else {
    double t = ratio, s = 1 - ratio;
    c = {((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A, ((A + 2) * t - (A + 3)) * t * t + 1,
         ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  }
  int64_t n = static_cast<int64_t>(c.size());
  int64_t pad = (n + 1) / 2;
  // The n padded indices nearest to x (ties to the smaller index), ascending.
  std::vector<int64_t> idx;
  for (int64_t i = -pad; i < in + pad; ++i) idx.push_back(i);
  kiln::stable_sort(
      idx, [&](int64_t p, int64_t q) { return std::fabs(x - double(p)) < std::fabs(x - double(q)); });
  idx.resize(static_cast<size_t>(n));
  std::sort(idx.begin(), idx.end());
  if (a.get_int("exclude_outside") && method != "nearest") {  // nearest has one tap to keep
    double s = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (idx[size_t(k)] < 0 || idx[size_t(k)] >= in) c[size_t(k)] = 0;
      s += c[size_t(k)];
    }
    for (auto& v : c) v /= s;
  }
  double r = 0;
  for (int64_t k = 0; k < n; ++k)
    r += c[size_t(k)] * data[size_t(std::clamp<int64_t>(idx[size_t(k)], 0, in - 1))];
  return r;
}

std::vector<double> naive_resize(const Tensor& x, int64_t oh, int64_t ow, const Attrs& a) {
  int64_t planes = x.shape()[0] * x.shape()[1], ih = x.shape()[2], iw = x.shape()[3];
  std::string ctm = a.get_string("coordinate_transformation_mode");
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        std::vector<double> col;  // each input row interpolated along W
        for (int64_t r = 0; r < ih; ++r) {
          std::vector<double> row;
          for (int64_t c = 0; c < iw; ++c) row.push_back(x.get_as_double((p * ih + r) * iw + c));
          col.push_back(naive_1d(row, naive_coord(ctm, ox, iw, ow), a));
        }
        out.push_back(naive_1d(col, naive_coord(ctm, oy, ih, oh), a));
      }
  return out;
}

TEST(Resize, EveryModeAgainstNaive) {
  Tensor x = Tensor::empty({2, 2, 4, 5}, DType::Float32);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set_from_double(i, std::sin(0.7 * double(i)) * 5 + 0.25 * double(i % 7));
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{8, 10}, {3, 2}, {1, 1}, {4, 5}, {7, 3}, {2, 13}};
  for (std::string method : {"nearest", "linear", "cubic"})
    for (std::string ctm :
         {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"})
      for (int64_t exclude : {0, 1})
        for (auto [oh, ow] : sizes) {
          Attrs a = modes(method, ctm);
          a.set("exclude_outside", exclude);
          a.set("size", std::vector<int64_t>{oh, ow});
          Attrs full = normalize_attrs(*find_op("image.resize2d"), a);
          auto want = naive_resize(x, oh, ow, full);
          auto got = values(run_op(*find_op("image.resize2d"), {x}, a).at(0));
          SCOPED_TRACE(method + " " + ctm + " exclude=" + std::to_string(exclude) + " " + std::to_string(oh) +
                       "x" + std::to_string(ow));
          expect_near_all(got, want, 1e-4);
        }
}

TEST(Resize, RoundingMethodsAgainstNaive) {
  Tensor x = Tensor::empty({1, 1, 5, 6}, DType::Float32);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_from_double(i, double(i));
  for (std::string r : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    for (std::string ctm : {"half_pixel", "align_corners", "asymmetric"})
      for (auto [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{{10, 12}, {3, 4}, {7, 9}}) {
        Attrs a = modes("nearest", ctm);
        a.set("rounding_method", r);
        a.set("size", std::vector<int64_t>{oh, ow});
        auto want = naive_resize(x, oh, ow, normalize_attrs(*find_op("image.resize2d"), a));
        SCOPED_TRACE(r + " " + ctm);
        EXPECT_EQ(values(run_op(*find_op("image.resize2d"), {x}, a).at(0)), want);
      }
}

TEST(Resize, Errors) {
  Tensor x = Tensor::zeros({1, 1, 2, 2}, DType::Float32);
  expect_error([&] { run_op(*find_op("image.resize2d"), {x}, {}); },
               "image.resize2d: missing required attribute 'size'");
  expect_error([&] { resize(x, {4}); },
               "image.resize2d: attribute 'size' must be [height, width] with both > 0, got [4]");
  expect_error(
      [&] {
        resize(x, {0, 4});
      },
      "attribute 'size' must be [height, width] with both > 0, got [0, 4]");
  expect_error(
      [&] {
        resize(x, {4, 4}, {{"method", std::string("area")}});
      },
      "image.resize2d: attribute 'method' = \"area\" is not supported (expected one of \"nearest\", "
      "\"linear\", \"cubic\")");
  expect_error(
      [&] {
        resize(x, {4, 4}, {{"coordinate_transformation_mode", std::string("tf_crop_and_box")}});
      },
      "attribute 'coordinate_transformation_mode' = \"tf_crop_and_box\" is not supported");
  expect_error(
      [&] {
        resize(x, {4, 4}, {{"rounding_method", std::string("round")}});
      },
      "attribute 'rounding_method' = \"round\" is not supported");
  expect_error(
      [&] {
        resize(x, {4, 4}, {{"exclude_outside", int64_t{2}}});
      },
      "image.resize2d: attribute 'exclude_outside' must be 0 or 1, got 2");
  expect_error(
      [&] {
        resize(Tensor::zeros({2, 2, 2}, DType::Float32), {4, 4});
      },
      "image.resize2d: input x must be NCHW (rank 4), got Tensor[(2, 2, 2), float32]");
  expect_error(
      [&] {
        resize(Tensor::zeros({1, 1, 2, 2}, DType::Int32), {4, 4});
      },
      "image.resize2d: input x has dtype int32; expected one of float32, float16, int8, uint8");
}

}  // namespace
}  // namespace kiln
