// quantize / dequantize against hand-computed values, rounding ties,
// clamping, and a naive loop written here with std::nearbyint.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <functional>
#include <limits>

#include "kiln/runtime/error.h"
#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

TEST(Quantize, TiesRoundHalfToEven) {
  Tensor x = Tensor::from_floats({8}, {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 2.4f});
  Tensor q = run1("quantize", {x}, {{"scale", 1.0}});
  EXPECT_EQ(q.dtype(), DType::Int8);
  EXPECT_EQ(values(q), (std::vector<double>{0, 2, 2, 4, 0, -2, -2, 2}));
  // With a scale of 0.5, x / scale = 2x: 0.25 -> 0.5 -> 0, 0.75 -> 1.5 -> 2.
  Tensor y = Tensor::from_floats({3}, {0.25f, 0.75f, -1.25f});
  EXPECT_EQ(values(run1("quantize", {y}, {{"scale", 0.5}})), (std::vector<double>{0, 2, -2}));
  // The zero point is added after rounding: round(2.5) + 1 = 3, not round(3.5) = 4.
  Tensor z = Tensor::from_floats({1}, {2.5f});
  EXPECT_EQ(values(run1("quantize", {z}, {{"scale", 1.0}, {"zero_point", int64_t{1}}})),
            (std::vector<double>{3}));
}

TEST(Quantize, ClampsToTheDtypeRange) {
  float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_floats({6}, {1000, -1000, 12.7f, -12.9f, inf, -inf});
  EXPECT_EQ(values(run1("quantize", {x}, {{"scale", 0.1}})),
            (std::vector<double>{127, -128, 127, -128, 127, -128}));
  Tensor u = run1("quantize", {x},
                  {{"scale", 0.1}, {"zero_point", int64_t{128}}, {"out_dtype", std::string("uint8")}});
  EXPECT_EQ(u.dtype(), DType::UInt8);
  // 12.7 / 0.1 = 127 (in float32: 126.99999 or 127.00001, rounds to 127) + 128 = 255.
  EXPECT_EQ(values(u), (std::vector<double>{255, 0, 255, 0, 255, 0}));
  // The zero point shifts the clamp: -1 / 1 + 10 = 9; -200 + 10 clamps to -128.
  Tensor s = Tensor::from_floats({3}, {-1, -200, 200});
  EXPECT_EQ(values(run1("quantize", {s}, {{"scale", 1.0}, {"zero_point", int64_t{10}}})),
            (std::vector<double>{9, -128, 127}));
  // NaN maps to the zero point.
  Tensor n = Tensor::from_floats({1}, {nan});
  EXPECT_EQ(values(run1("quantize", {n}, {{"scale", 1.0}, {"zero_point", int64_t{-3}}})),
            (std::vector<double>{-3}));
}

TEST(Quantize, AgainstNaiveLoop) {
  Tensor x = Tensor::empty({200}, DType::Float32);
  for (int64_t i = 0; i < 200; ++i) x.data<float>()[i] = static_cast<float>(std::sin(0.1 * double(i)) * 3.0);
  const float scale = 0.0235f;
  for (int64_t zp : {int64_t{0}, int64_t{-20}, int64_t{37}}) {
    Tensor q = run1("quantize", {x}, {{"scale", double(scale)}, {"zero_point", zp}});
    ASSERT_EQ(std::fegetround(), FE_TONEAREST);
    for (int64_t i = 0; i < 200; ++i) {
      double want = std::nearbyint(x.data<float>()[i] / scale) + double(zp);
      want = std::min(127.0, std::max(-128.0, want));
      EXPECT_EQ(q.data<int8_t>()[i], static_cast<int8_t>(want)) << i;
    }
  }
}

TEST(Dequantize, HandValues) {
  Tensor q = Tensor::from_ints({4}, {-128, 0, 5, 127}, DType::Int8);
  EXPECT_EQ(values(run1("dequantize", {q}, {{"scale", 0.5}, {"zero_point", int64_t{1}}})),
            (std::vector<double>{-64.5, -0.5, 2, 63}));
  Tensor u = Tensor::from_ints({3}, {0, 128, 255}, DType::UInt8);
  Tensor f = run1("dequantize", {u}, {{"scale", 0.25}, {"zero_point", int64_t{128}}});
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_EQ(values(f), (std::vector<double>{-32, 0, 31.75}));
  Tensor i = Tensor::from_ints({2}, {std::numeric_limits<int32_t>::min(), 1000000}, DType::Int32);
  Tensor g = run1("dequantize", {i}, {{"scale", 2.0}, {"zero_point", int64_t{-5}}});
  EXPECT_EQ(values(g), (std::vector<double>{float(2147483648.0 - 5) * -2.0f, 2000010}));
}

TEST(Quantize, RoundTripIsWithinHalfAStep) {
  Tensor x = Tensor::empty({50}, DType::Float32);
  for (int64_t i = 0; i < 50; ++i) x.data<float>()[i] = -1.0f + 0.04f * float(i);
  Attrs a = {{"scale", 0.01}, {"zero_point", int64_t{5}}};
  Tensor back = run1("dequantize", {run1("quantize", {x}, a)}, a);
  for (int64_t i = 0; i < 50; ++i) {
    float v = x.data<float>()[i];
    // Values beyond the int8 range ((-128 - 5) * 0.01 .. (127 - 5) * 0.01) clamp.
    float clamped = std::min(1.22f, std::max(-1.33f, v));
    EXPECT_NEAR(back.data<float>()[i], clamped, 0.005f + 1e-6f) << v;
  }
}

TEST(Quantize, Errors) {
  Tensor x = Tensor::zeros({2}, DType::Float32);
  expect_error([&] { run1("quantize", {x}, {}); }, "quantize: missing required attribute 'scale'");
  expect_error(
      [&] {
        run1("quantize", {x}, {{"scale", 0.0}});
      },
      "quantize: attribute 'scale' must be a finite number > 0 (as float32), got 0.0");
  expect_error(
      [&] {
        run1("quantize", {x}, {{"scale", -1.0}});
      },
      "quantize: attribute 'scale' must be a finite number > 0");
  expect_error(
      [&] {
        run1("quantize", {x}, {{"scale", 1.0}, {"zero_point", int64_t{128}}});
      },
      "quantize: attribute 'zero_point' = 128 does not fit int8 (-128..127)");
  expect_error(
      [&] {
        run1("quantize", {x},
             {{"scale", 1.0}, {"zero_point", int64_t{-1}}, {"out_dtype", std::string("uint8")}});
      },
      "quantize: attribute 'zero_point' = -1 does not fit uint8 (0..255)");
  expect_error(
      [&] {
        run1("quantize", {x}, {{"scale", 1.0}, {"out_dtype", std::string("int16")}});
      },
      "quantize: attribute 'out_dtype' = \"int16\" is not supported (expected \"int8\" or \"uint8\")");
  expect_error(
      [&] {
        run1("quantize", {Tensor::zeros({2}, DType::Int8)}, {{"scale", 1.0}});
      },
      "quantize: input x has dtype int8; expected float32");
  expect_error(
      [&] {
        run1("dequantize", {x}, {{"scale", 1.0}});
      },
      "dequantize: input q has dtype float32; expected one of int8, uint8, int32");
  expect_error(
      [&] {
        run1("dequantize", {Tensor::zeros({2}, DType::UInt8)},
             {{"scale", 1.0}, {"zero_point", int64_t{256}}});
      },
      "dequantize: attribute 'zero_point' = 256 does not fit uint8 (0..255)");
}

}  // namespace
}  // namespace kiln
