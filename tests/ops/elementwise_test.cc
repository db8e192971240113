// Elementwise ops against hand-computed values and a naive broadcasting
// implementation written here (index arithmetic per element, no strides).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>

#include "kiln/runtime/error.h"
#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

// Naive numpy broadcasting: unravel each output index, map to each input.
std::vector<double> naive_broadcast(const Tensor& a, const Tensor& b,
                                    const std::function<double(double, double)>& f, Shape* out_shape) {
  size_t rank = std::max(a.shape().size(), b.shape().size());
  Shape out(rank);
  auto dim_of = [&](const Shape& s, size_t i) -> int64_t {
    size_t off = rank - s.size();
    return i < off ? 1 : s[i - off];
  };
  for (size_t i = 0; i < rank; ++i) out[i] = std::max(dim_of(a.shape(), i), dim_of(b.shape(), i));
  *out_shape = out;
  auto flat_index = [&](const Shape& s, const std::vector<int64_t>& idx) {
    int64_t f = 0;
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) f = f * s[i] + (s[i] == 1 ? 0 : idx[off + i]);
    return f;
  };
  std::vector<double> r;
  int64_t n = shape_numel(out);
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int64_t> idx(rank);
    int64_t rem = k;
    for (size_t i = rank; i-- > 0;) {
      idx[i] = rem % out[i];
      rem /= out[i];
    }
    r.push_back(f(a.get_as_double(flat_index(a.shape(), idx)), b.get_as_double(flat_index(b.shape(), idx))));
  }
  return r;
}

Tensor iota(const Shape& s, double start = 0, double step = 1) {
  Tensor t = Tensor::empty(s, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, start + step * static_cast<double>(i));
  return t;
}

TEST(Elementwise, AddSameShape) {
  Tensor a = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_floats({2, 3}, {10, 20, 30, 40, 50, 60});
  EXPECT_EQ(values(run1("add", {a, b})), (std::vector<double>{11, 22, 33, 44, 55, 66}));
  EXPECT_EQ(values(run1("subtract", {a, b})), (std::vector<double>{-9, -18, -27, -36, -45, -54}));
  EXPECT_EQ(values(run1("multiply", {a, b})), (std::vector<double>{10, 40, 90, 160, 250, 360}));
  EXPECT_EQ(values(run1("divide", {b, a})), (std::vector<double>{10, 10, 10, 10, 10, 10}));
}

TEST(Elementwise, BroadcastingAgainstNaive) {
  struct Case {
    Shape a, b;
  };
  std::vector<Case> cases = {
      {{2, 3}, {3}}, {{2, 3}, {2, 1}},          {{1, 3}, {2, 1}}, {{4, 1, 3}, {2, 1}},    {{2, 3, 4}, {}},
      {{}, {2, 2}},  {{2, 1, 4, 1}, {3, 1, 5}}, {{1}, {1}},       {{3, 1, 1}, {1, 2, 2}},
  };
  std::vector<std::pair<std::string, std::function<double(double, double)>>> ops = {
      {"add", [](double x, double y) { return double(float(x) + float(y)); }},
      {"subtract", [](double x, double y) { return double(float(x) - float(y)); }},
      {"multiply", [](double x, double y) { return double(float(x) * float(y)); }},
      {"divide", [](double x, double y) { return double(float(x) / float(y)); }},
      {"maximum", [](double x, double y) { return std::max(x, y); }},
      {"minimum", [](double x, double y) { return std::min(x, y); }},
  };
  for (const auto& c : cases) {
    Tensor a = iota(c.a, -3.5, 1.25);
    Tensor b = iota(c.b, 0.75, 0.5);
    for (const auto& [name, f] : ops) {
      Shape want_shape;
      std::vector<double> want = naive_broadcast(a, b, f, &want_shape);
      Tensor y = run1(name, {a, b});
      EXPECT_EQ(y.shape(), want_shape) << name << " " << shape_str(c.a) << " " << shape_str(c.b);
      EXPECT_EQ(values(y), want) << name << " " << shape_str(c.a) << " " << shape_str(c.b);
    }
  }
}

TEST(Elementwise, BroadcastInnerAndOuterStrides) {
  // (2, 3) + (2, 1): the column broadcasts along the inner axis.
  Tensor a = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_floats({2, 1}, {100, 200});
  Tensor y = run1("add", {a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{101, 102, 103, 204, 205, 206}));
  // (3,) - (2, 1) gives (2, 3), b broadcast along rows and a along columns.
  Tensor c = Tensor::from_floats({3}, {1, 2, 3});
  Tensor z = run1("subtract", {c, b});
  EXPECT_EQ(values(z), (std::vector<double>{-99, -98, -97, -199, -198, -197}));
}

TEST(Elementwise, Int8WrapsAround) {
  Tensor a = tensor_of({4}, DType::Int8, {127, -128, 100, -100});
  Tensor b = tensor_of({4}, DType::Int8, {1, -1, 100, 100});
  EXPECT_EQ(values(run1("add", {a, b})), (std::vector<double>{-128, 127, -56, 0}));
  EXPECT_EQ(values(run1("subtract", {a, b})), (std::vector<double>{126, -127, 0, 56}));
  // 100 * 100 = 10000 = 39 * 256 + 16; -100 * 100 = -10000 -> -16.
  EXPECT_EQ(values(run1("multiply", {a, b})), (std::vector<double>{127, -128, 16, -16}));
}

TEST(Elementwise, UInt8AndInt32Wrap) {
  Tensor a = tensor_of({2}, DType::UInt8, {250, 3});
  Tensor b = tensor_of({2}, DType::UInt8, {10, 5});
  EXPECT_EQ(values(run1("add", {a, b})), (std::vector<double>{4, 8}));
  EXPECT_EQ(values(run1("subtract", {a, b})), (std::vector<double>{240, 254}));
  Tensor c = Tensor::from_ints({2}, {std::numeric_limits<int32_t>::max(), 65536}, DType::Int32);
  Tensor d = Tensor::from_ints({2}, {1, 65536}, DType::Int32);
  Tensor s = run1("add", {c, d});
  EXPECT_EQ(s.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  Tensor m = run1("multiply", {c, d});
  EXPECT_EQ(m.data<int32_t>()[1], 0);  // 2^32 wraps to 0
  Tensor e = Tensor::from_ints({1}, {std::numeric_limits<int64_t>::max()});
  Tensor f = Tensor::from_ints({1}, {2});
  EXPECT_EQ(run1("multiply", {e, f}).data<int64_t>()[0], -2);
}

TEST(Elementwise, IntegerDivideTruncatesTowardZero) {
  Tensor a = Tensor::from_ints({6}, {7, -7, 7, -7, 0, -128}, DType::Int8);
  Tensor b = Tensor::from_ints({6}, {2, 2, -2, -2, 5, -1}, DType::Int8);
  EXPECT_EQ(values(run1("divide", {a, b})), (std::vector<double>{3, -3, -3, 3, 0, -128}));
  Tensor c = Tensor::from_ints({1}, {std::numeric_limits<int64_t>::min()});
  Tensor d = Tensor::from_ints({1}, {-1});
  EXPECT_EQ(run1("divide", {c, d}).data<int64_t>()[0], std::numeric_limits<int64_t>::min());
}

TEST(Elementwise, IntegerDivisionByZeroIsAnError) {
  Tensor a = Tensor::from_ints({2}, {1, 2}, DType::Int32);
  Tensor b = Tensor::from_ints({2}, {1, 0}, DType::Int32);
  expect_error([&] { run1("divide", {a, b}); }, "divide: integer division by zero");
}

TEST(Elementwise, FloatDivisionByZeroGivesInf) {
  Tensor a = Tensor::from_floats({2}, {1, -1});
  Tensor b = Tensor::from_floats({1}, {0});
  Tensor y = run1("divide", {a, b});
  EXPECT_EQ(y.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y.data<float>()[1], -std::numeric_limits<float>::infinity());
}

TEST(Elementwise, Power) {
  Tensor a = Tensor::from_floats({4}, {2, 9, 4, -2});
  Tensor b = Tensor::from_floats({4}, {10, 0.5, -1, 3});
  EXPECT_EQ(values(run1("power", {a, b})), (std::vector<double>{1024, 3, 0.25, -8}));
  // Integers: exact, and wrapping like repeated multiplication.
  Tensor c = Tensor::from_ints({5}, {3, -2, 7, 2, 10});
  Tensor d = Tensor::from_ints({5}, {39, 5, 0, 63, 1});
  std::vector<int64_t> want = {4052555153018976267LL, -32, 1, int64_t(1) << 62 << 1, 10};
  Tensor p = run1("power", {c, d});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.data<int64_t>()[i], want[i]) << i;
  Tensor e = Tensor::from_ints({3}, {2, 16, -3}, DType::Int8);
  Tensor f = Tensor::from_ints({3}, {7, 2, 3}, DType::Int8);
  EXPECT_EQ(values(run1("power", {e, f})), (std::vector<double>{-128, 0, -27}));
  // Negative exponents: 1 / x^e truncated toward zero.
  Tensor g = Tensor::from_ints({4}, {1, -1, -1, 5}, DType::Int32);
  Tensor h = Tensor::from_ints({4}, {-3, -3, -2, -1}, DType::Int32);
  EXPECT_EQ(values(run1("power", {g, h})), (std::vector<double>{1, -1, 1, 0}));
  Tensor zero = Tensor::from_ints({1}, {0}, DType::Int32);
  Tensor neg = Tensor::from_ints({1}, {-1}, DType::Int32);
  expect_error([&] { run1("power", {zero, neg}); }, "power: integer 0 raised to a negative power");
}

TEST(Elementwise, MaximumMinimumPropagateNaN) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = Tensor::from_floats({3}, {nan, 1, 5});
  Tensor b = Tensor::from_floats({3}, {1, nan, 2});
  Tensor mx = run1("maximum", {a, b});
  Tensor mn = run1("minimum", {a, b});
  EXPECT_TRUE(std::isnan(mx.data<float>()[0]));
  EXPECT_TRUE(std::isnan(mx.data<float>()[1]));
  EXPECT_EQ(mx.data<float>()[2], 5.0f);
  EXPECT_TRUE(std::isnan(mn.data<float>()[0]));
  EXPECT_TRUE(std::isnan(mn.data<float>()[1]));
  EXPECT_EQ(mn.data<float>()[2], 2.0f);
  Tensor c = tensor_of({2}, DType::UInt8, {200, 3});
  Tensor d = tensor_of({2}, DType::UInt8, {100, 7});
  EXPECT_EQ(values(run1("maximum", {c, d})), (std::vector<double>{200, 7}));
  EXPECT_EQ(values(run1("minimum", {c, d})), (std::vector<double>{100, 3}));
}

TEST(Elementwise, Float16ComputesInFloatAndRoundsOnce) {
  Tensor a = tensor_of({3}, DType::Float16, {1.0, 2048.0, 0.1});
  Tensor b = tensor_of({3}, DType::Float16, {2.0, 1.0, 0.2});
  Tensor y = run1("add", {a, b});
  EXPECT_EQ(y.dtype(), DType::Float16);
  // 2048 + 1 is a tie in half precision: rounds to even, 2048.
  EXPECT_EQ(values(y)[0], 3.0);
  EXPECT_EQ(values(y)[1], 2048.0);
  float want =
      half_to_float(float_to_half(half_to_float(float_to_half(0.1f)) + half_to_float(float_to_half(0.2f))));
  EXPECT_EQ(values(y)[2], want);
}

TEST(Elementwise, BinaryErrors) {
  Tensor f = Tensor::from_floats({2, 3}, {0, 0, 0, 0, 0, 0});
  Tensor g = Tensor::from_floats({4}, {0, 0, 0, 0});
  expect_error([&] { run1("add", {f, g}); }, "add: shapes (2, 3) and (4,) do not broadcast");
  Tensor i = Tensor::zeros({2, 3}, DType::Int32);
  expect_error([&] { run1("multiply", {f, i}); }, "multiply: inputs have different dtypes float32 and int32");
  Tensor bl = Tensor::zeros({2}, DType::Bool);
  expect_error([&] { run1("add", {bl, bl}); }, "add: input 0 has dtype bool");
  expect_error([&] { run1("add", {f}); }, "add takes 2 input(s), got 1");
  // Inference alone reports the same.
  expect_error(
      [&] {
        infer_op(*find_op("maximum"), {{{3, 2}, DType::Float32}, {{3}, DType::Float32}}, {});
      },
      "maximum: shapes (3, 2) and (3,) do not broadcast");
}

TEST(Elementwise, BroadcastInference) {
  auto out = infer_op(*find_op("add"), {{{8, 1, 6, 1}, DType::Int8}, {{7, 1, 5}, DType::Int8}}, {});
  EXPECT_EQ(out[0].shape, (Shape{8, 7, 6, 5}));
  EXPECT_EQ(out[0].dtype, DType::Int8);
  auto zero = infer_op(*find_op("add"), {{{0, 3}, DType::Float32}, {{1, 3}, DType::Float32}}, {});
  EXPECT_EQ(zero[0].shape, (Shape{0, 3}));
  Tensor e = run1("add", {Tensor::zeros({0, 3}, DType::Float32), Tensor::zeros({3}, DType::Float32)});
  EXPECT_EQ(e.numel(), 0);
}

// ---- unary -----------------------------------------------------------------

void expect_unary(const std::string& op, const std::vector<float>& x, const std::function<double(double)>& f,
                  const Attrs& attrs = {}) {
  Tensor t = Tensor::from_floats({static_cast<int64_t>(x.size())}, x);
  Tensor y = run1(op, {t}, attrs);
  ASSERT_EQ(y.dtype(), DType::Float32);
  for (size_t i = 0; i < x.size(); ++i) {
    double want = f(x[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y.data<float>()[i])) << op << " at " << x[i];
    } else {
      EXPECT_FLOAT_EQ(y.data<float>()[i], static_cast<float>(want)) << op << " at " << x[i];
    }
  }
}

TEST(Elementwise, UnaryHandValues) {
  Tensor x = Tensor::from_floats({5}, {-2, -0.5, 0, 0.5, 3});
  EXPECT_EQ(values(run1("nn.relu", {x})), (std::vector<double>{0, 0, 0, 0.5, 3}));
  EXPECT_EQ(values(run1("negative", {x})), (std::vector<double>{2, 0.5, 0, -0.5, -3}));
  EXPECT_EQ(values(run1("abs", {x})), (std::vector<double>{2, 0.5, 0, 0.5, 3}));
  Tensor s = Tensor::from_floats({3}, {0, 4, 2.25});
  EXPECT_EQ(values(run1("sqrt", {s})), (std::vector<double>{0, 2, 1.5}));
  Tensor z = Tensor::from_floats({1}, {0});
  EXPECT_EQ(values(run1("sigmoid", {z})), (std::vector<double>{0.5}));
  EXPECT_EQ(values(run1("exp", {z})), (std::vector<double>{1}));
  EXPECT_EQ(values(run1("tanh", {z})), (std::vector<double>{0}));
  EXPECT_FLOAT_EQ(run1("sigmoid", {Tensor::from_floats({1}, {2})}).data<float>()[0], 0.880797078f);
  EXPECT_FLOAT_EQ(run1("tanh", {Tensor::from_floats({1}, {1})}).data<float>()[0], 0.761594156f);
  EXPECT_FLOAT_EQ(run1("erf", {Tensor::from_floats({1}, {1})}).data<float>()[0], 0.842700793f);
  EXPECT_FLOAT_EQ(
      run1("log", {Tensor::from_floats({1}, {static_cast<float>(std::numbers::e)})}).data<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(run1("exp", {Tensor::from_floats({1}, {1})}).data<float>()[0], 2.718281828f);
  Tensor lg = run1("log", {Tensor::from_floats({2}, {0, -1})});
  EXPECT_EQ(lg.data<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(lg.data<float>()[1]));
}

TEST(Elementwise, UnaryAgainstFormulas) {
  std::vector<float> xs = {-6, -3, -2.5, -1, -0.25, 0, 0.3, 1, 2.5, 3, 7};
  expect_unary("sigmoid", xs, [](double v) { return 1 / (1 + std::exp(-v)); });
  expect_unary("tanh", xs, [](double v) { return std::tanh(v); });
  expect_unary("erf", xs, [](double v) { return std::erf(v); });
  expect_unary("nn.gelu", xs, [](double v) { return v * 0.5 * std::erfc(-v / std::sqrt(2.0)); });
  expect_unary(
      "nn.gelu", xs,
      [](double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); },
      {{"approximate", std::string("tanh")}});
  expect_unary("nn.leaky_relu", xs, [](double v) { return v < 0 ? 0.01 * v : v; });
  expect_unary("nn.leaky_relu", xs, [](double v) { return v < 0 ? 0.3 * v : v; }, {{"alpha", 0.3}});
  expect_unary("nn.hard_sigmoid", xs, [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); });
  expect_unary("nn.hard_sigmoid", xs, [](double v) { return std::clamp(0.5 * v + 0.1, 0.0, 1.0); },
               {{"alpha", 0.5}, {"beta", 0.1}});
  expect_unary("nn.hard_swish", xs, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); });
  expect_unary("nn.silu", xs, [](double v) { return v / (1 + std::exp(-v)); });
  expect_unary("floor", xs, [](double v) { return std::floor(v); });
  expect_unary("ceil", xs, [](double v) { return std::ceil(v); });
}

TEST(Elementwise, HardSwishAndGeluHandValues) {
  // hard_swish(-3) = 0, hard_swish(3) = 3, hard_swish(1) = 1 * 4 / 6.
  Tensor x = Tensor::from_floats({3}, {-3, 3, 1});
  Tensor y = run1("nn.hard_swish", {x});
  EXPECT_FLOAT_EQ(y.data<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 3.0f);
  EXPECT_FLOAT_EQ(y.data<float>()[2], 4.0f / 6.0f);
  // gelu(1) = 0.5 * (1 + erf(1 / sqrt 2)) = 0.841344746.
  EXPECT_FLOAT_EQ(run1("nn.gelu", {Tensor::from_floats({1}, {1})}).data<float>()[0], 0.841344746f);
  // The tanh form differs slightly: 0.841191990.
  EXPECT_FLOAT_EQ(run1("nn.gelu", {Tensor::from_floats({1}, {1})}, {{"approximate", std::string("tanh")}})
                      .data<float>()[0],
                  0.841191990f);
}

TEST(Elementwise, RoundHalfToEven) {
  Tensor x = Tensor::from_floats({9}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6});
  EXPECT_EQ(values(run1("round", {x})), (std::vector<double>{0, 2, 2, -0, -2, -2, 2, 3, -3}));
}

TEST(Elementwise, IntegerUnary) {
  Tensor x = tensor_of({4}, DType::Int8, {-128, -5, 0, 127});
  EXPECT_EQ(values(run1("nn.relu", {x})), (std::vector<double>{0, 0, 0, 127}));
  EXPECT_EQ(values(run1("negative", {x})), (std::vector<double>{-128, 5, 0, -127}));
  EXPECT_EQ(values(run1("abs", {x})), (std::vector<double>{-128, 5, 0, 127}));
  Tensor u = tensor_of({2}, DType::UInt8, {0, 200});
  EXPECT_EQ(values(run1("abs", {u})), (std::vector<double>{0, 200}));
  EXPECT_EQ(values(run1("negative", {u})), (std::vector<double>{0, 56}));
}

TEST(Elementwise, Clip) {
  Tensor x = Tensor::from_floats({5}, {-2, -0.5, 0.25, 0.9, 5});
  EXPECT_EQ(values(run1("clip", {x}, {{"a_min", -1.0}, {"a_max", 0.5}})),
            (std::vector<double>{-1, -0.5, 0.25, 0.5, 0.5}));
  // Integers clamp to the bounds rounded half to even: [-2.5, 3.5] -> [-2, 4].
  Tensor i = tensor_of({5}, DType::Int8, {-128, -3, 0, 4, 127});
  EXPECT_EQ(values(run1("clip", {i}, {{"a_min", -2.5}, {"a_max", 3.5}})),
            (std::vector<double>{-2, -2, 0, 4, 4}));
  // Bounds beyond the dtype saturate instead of wrapping.
  EXPECT_EQ(values(run1("clip", {i}, {{"a_min", -1000.0}, {"a_max", 1000.0}})),
            (std::vector<double>{-128, -3, 0, 4, 127}));
  // a_min > a_max: everything becomes a_max (numpy and ONNX Clip agree).
  EXPECT_EQ(values(run1("clip", {x}, {{"a_min", 2.0}, {"a_max", 1.0}})),
            (std::vector<double>{1, 1, 1, 1, 1}));
  EXPECT_EQ(values(run1("clip", {i}, {{"a_min", 5.0}, {"a_max", -5.0}})),
            (std::vector<double>{-5, -5, -5, -5, -5}));
  Tensor u = tensor_of({3}, DType::UInt8, {0, 6, 255});
  EXPECT_EQ(values(run1("clip", {u}, {{"a_min", int64_t{0}}, {"a_max", int64_t{6}}})),
            (std::vector<double>{0, 6, 6}));
}

TEST(Elementwise, UnaryErrors) {
  Tensor i = Tensor::zeros({2}, DType::Int32);
  Tensor f = Tensor::zeros({2}, DType::Float32);
  expect_error([&] { run1("exp", {i}); }, "exp: input x has dtype int32; expected one of float32, float16");
  expect_error([&] { run1("sigmoid", {i}); }, "sigmoid: input x has dtype int32");
  expect_error([&] { run1("nn.silu", {i}); }, "nn.silu: input x has dtype int32");
  expect_error([&] { run1("nn.relu", {Tensor::zeros({2}, DType::Bool)}); },
               "nn.relu: input x has dtype bool");
  expect_error(
      [&] {
        run1("clip", {f}, {{"a_min", std::nan("")}, {"a_max", 0.0}});
      },
      "clip: attributes 'a_min' and 'a_max' must not be NaN");
  expect_error([&] { run1("clip", {f}, {{"a_min", 1.0}}); }, "clip: missing required attribute 'a_max'");
  expect_error(
      [&] {
        run1("nn.gelu", {f}, {{"approximate", std::string("fast")}});
      },
      "nn.gelu: attribute 'approximate' = \"fast\" is not supported");
  expect_error(
      [&] {
        run1("nn.leaky_relu", {f}, {{"alpha", std::string("x")}});
      },
      "nn.leaky_relu: attribute 'alpha' must be a float");
}

TEST(Elementwise, UnaryFloat16) {
  Tensor x = tensor_of({3}, DType::Float16, {-1.0, 0.0, 2.0});
  Tensor y = run1("sigmoid", {x});
  EXPECT_EQ(y.dtype(), DType::Float16);
  EXPECT_EQ(values(y)[1], 0.5);
  EXPECT_EQ(values(y)[2], half_to_float(float_to_half(static_cast<float>(1 / (1 + std::exp(-2.0))))));
}

// ---- astype ----------------------------------------------------------------

TEST(Elementwise, AstypeFloatToIntTruncatesAndSaturates) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  float inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_floats({8}, {1.9f, -1.9f, 200.0f, -200.0f, nan, inf, -inf, -0.5f});
  Tensor y = run1("astype", {x}, {{"dtype", std::string("int8")}});
  EXPECT_EQ(y.dtype(), DType::Int8);
  EXPECT_EQ(values(y), (std::vector<double>{1, -1, 127, -128, 0, 127, -128, 0}));
  Tensor u = run1("astype", {x}, {{"dtype", std::string("uint8")}});
  EXPECT_EQ(values(u), (std::vector<double>{1, 0, 200, 0, 0, 255, 0, 0}));
  Tensor big = Tensor::from_floats({3}, {3e9f, -3e9f, 1e20f});
  EXPECT_EQ(values(run1("astype", {big}, {{"dtype", std::string("int32")}})),
            (std::vector<double>{2147483647, -2147483648.0, 2147483647}));
  Tensor l = run1("astype", {big}, {{"dtype", std::string("int64")}});
  EXPECT_EQ(l.data<int64_t>()[0], 3000000000LL);
  EXPECT_EQ(l.data<int64_t>()[2], std::numeric_limits<int64_t>::max());
}

TEST(Elementwise, AstypeOtherPairs) {
  Tensor i = Tensor::from_ints({4}, {300, -1, 0, 16777217});
  // int -> narrower int wraps like numpy.
  EXPECT_EQ(values(run1("astype", {i}, {{"dtype", std::string("int8")}})),
            (std::vector<double>{44, -1, 0, 1}));
  EXPECT_EQ(values(run1("astype", {i}, {{"dtype", std::string("uint8")}})),
            (std::vector<double>{44, 255, 0, 1}));
  // To bool: nonzero is true.
  EXPECT_EQ(values(run1("astype", {i}, {{"dtype", std::string("bool")}})), (std::vector<double>{1, 1, 0, 1}));
  Tensor f = Tensor::from_floats({3}, {0.0f, -0.0f, 0.1f});
  EXPECT_EQ(values(run1("astype", {f}, {{"dtype", std::string("bool")}})), (std::vector<double>{0, 0, 1}));
  // int64 -> float32 rounds to nearest even: 2^24 + 1 -> 2^24.
  EXPECT_EQ(values(run1("astype", {i}))[3], 16777216.0);
  // Default target is float32; bool -> float is 0/1.
  Tensor b = tensor_of({2}, DType::Bool, {1, 0});
  Tensor bf = run1("astype", {b});
  EXPECT_EQ(bf.dtype(), DType::Float32);
  EXPECT_EQ(values(bf), (std::vector<double>{1, 0}));
  // float32 -> float16 rounds to nearest even; float16 -> int truncates.
  Tensor h =
      run1("astype", {Tensor::from_floats({2}, {2049.0f, 70000.0f})}, {{"dtype", std::string("float16")}});
  EXPECT_EQ(values(h), (std::vector<double>{2048, std::numeric_limits<double>::infinity()}));
  Tensor hi =
      run1("astype", {tensor_of({2}, DType::Float16, {-2.75, 300})}, {{"dtype", std::string("int8")}});
  EXPECT_EQ(values(hi), (std::vector<double>{-2, 127}));
  // Same dtype is a copy.
  Tensor same = run1("astype", {f}, {{"dtype", std::string("float32")}});
  EXPECT_TRUE(same.bitwise_equal(f));
  EXPECT_NE(same.raw(), f.raw());
}

TEST(Elementwise, AstypeErrors) {
  Tensor f = Tensor::zeros({2}, DType::Float32);
  expect_error(
      [&] {
        run1("astype", {f}, {{"dtype", std::string("float96")}});
      },
      "astype: attribute 'dtype' = \"float96\" is not a dtype");
  expect_error(
      [&] {
        run1("astype", {f}, {{"dtype", int64_t{3}}});
      },
      "astype: attribute 'dtype' must be a string");
}

// ---- mod, fmod, sign, trigonometry ------------------------------------------

TEST(Elementwise, ModAndFModSigns) {
  // Python: 7 % 3 = 1, -7 % 3 = 2, 7 % -3 = -2, -7 % -3 = -1; C fmod keeps a's sign.
  Tensor a = tensor_of({4}, DType::Int32, {7, -7, 7, -7});
  Tensor b = tensor_of({4}, DType::Int32, {3, 3, -3, -3});
  expect_equal(run1("mod", {a, b}), {1, 2, -2, -1});
  expect_equal(run1("fmod", {a, b}), {1, -1, 1, -1});
  // Exact multiples are 0 in both, also the int8 minimum divided by -1.
  Tensor m = tensor_of({3}, DType::Int8, {-128, 6, -6});
  Tensor d = tensor_of({3}, DType::Int8, {-1, 3, 3});
  expect_equal(run1("mod", {m, d}), {0, 0, 0});
  expect_equal(run1("fmod", {m, d}), {0, 0, 0});
  // uint8 200 % 7 = 4 (not a negative int8).
  expect_equal(run1("mod", {tensor_of({1}, DType::UInt8, {200}), tensor_of({1}, DType::UInt8, {7})}), {4});
  // Floats: -5.5 mod 2 = 0.5, fmod = -1.5; broadcasting a scalar divisor.
  Tensor x = Tensor::from_floats({3}, {-5.5f, 5.5f, 4});
  Tensor two = Tensor::from_floats({}, {2});
  expect_equal(run1("mod", {x, two}), {0.5, 1.5, 0});
  expect_equal(run1("fmod", {x, two}), {-1.5, 1.5, 0});
  expect_equal(run1("mod", {x, Tensor::from_floats({}, {-2})}), {-1.5, -0.5, 0});
  Tensor z = run1("fmod", {x, Tensor::from_floats({}, {0})});
  EXPECT_TRUE(std::isnan(z.data<float>()[0]));
  expect_error(
      [&] {
        run1("mod", {a, tensor_of({4}, DType::Int32, {1, 0, 1, 1})});
      },
      "mod: integer division by zero");
  expect_error(
      [&] {
        run1("fmod", {a, tensor_of({}, DType::Int32, {0})});
      },
      "fmod: integer division by zero");
}

TEST(Elementwise, Sign) {
  Tensor x = tensor_of({5}, DType::Float32, {-2.5, -0.0, 0, 3, std::numeric_limits<double>::quiet_NaN()});
  Tensor y = run1("sign", {x});
  EXPECT_EQ(y.data<float>()[0], -1.0f);
  EXPECT_EQ(y.data<float>()[1], 0.0f);
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  EXPECT_EQ(y.data<float>()[3], 1.0f);
  EXPECT_TRUE(std::isnan(y.data<float>()[4]));
  expect_equal(run1("sign", {tensor_of({4}, DType::Int8, {-128, -1, 0, 127})}), {-1, -1, 0, 1});
  expect_equal(run1("sign", {tensor_of({2}, DType::UInt8, {0, 255})}), {0, 1});
  expect_equal(run1("sign", {tensor_of({2}, DType::Int64, {-7, 9})}), {-1, 1});
}

TEST(Elementwise, TrigonometryHandValues) {
  const double pi = std::numbers::pi;
  Tensor x = Tensor::from_floats({3}, {0, static_cast<float>(pi / 6), static_cast<float>(pi / 4)});
  expect_close(run1("sin", {x}), {0, 0.5, std::sqrt(0.5)}, 1e-6);
  expect_close(run1("cos", {x}), {1, std::sqrt(0.75), std::sqrt(0.5)}, 1e-6);
  expect_close(run1("tan", {x}), {0, 1 / std::sqrt(3.0), 1}, 1e-6);
  Tensor h = Tensor::from_floats({3}, {0, 0.5, 1});
  expect_close(run1("asin", {h}), {0, pi / 6, pi / 2}, 1e-6);
  expect_close(run1("acos", {h}), {pi / 2, pi / 3, 0}, 1e-6);
  expect_close(run1("atan", {h}), {0, 0.463647609, pi / 4}, 1e-6);
  // sinh(1) = (e - 1/e) / 2, cosh(1) = (e + 1/e) / 2, asinh(1) = log(1 + sqrt 2).
  const double e = std::numbers::e;
  expect_close(run1("sinh", {h}), {0, 0.521095305, (e - 1 / e) / 2}, 1e-6);
  expect_close(run1("cosh", {h}), {1, 1.127625965, (e + 1 / e) / 2}, 1e-6);
  expect_close(run1("asinh", {h}), {0, 0.481211825, std::log(1 + std::sqrt(2.0))}, 1e-6);
  expect_close(run1("acosh", {Tensor::from_floats({2}, {1, 2})}), {0, std::log(2 + std::sqrt(3.0))}, 1e-6);
  expect_close(run1("atanh", {Tensor::from_floats({2}, {0, 0.5})}), {0, 0.5 * std::log(3.0)}, 1e-6);
  // Outside the domain: NaN; at the edge of atanh: infinity.
  EXPECT_TRUE(std::isnan(run1("asin", {Tensor::from_floats({1}, {2})}).data<float>()[0]));
  EXPECT_TRUE(std::isnan(run1("acosh", {Tensor::from_floats({1}, {0.5f})}).data<float>()[0]));
  EXPECT_EQ(run1("atanh", {Tensor::from_floats({1}, {1})}).data<float>()[0],
            std::numeric_limits<float>::infinity());
  // float16 rounds the double result once.
  Tensor x16 = tensor_of({1}, DType::Float16, {0.5});
  EXPECT_EQ(run1("sin", {x16}).get_as_double(0), double(half_to_float(float_to_half(float(std::sin(0.5))))));
  expect_error([&] { run1("cos", {tensor_of({1}, DType::Int32, {0})}); },
               "cos: input x has dtype int32; expected one of float32, float16");
}

TEST(Elementwise, TrigonometryAgainstStd) {
  std::vector<float> xs = {-3, -0.9f, -0.5f, 0, 0.25f, 0.9f, 2, 5};
  expect_unary("sin", xs, [](double v) { return std::sin(v); });
  expect_unary("cos", xs, [](double v) { return std::cos(v); });
  expect_unary("tan", xs, [](double v) { return std::tan(v); });
  expect_unary("asin", xs, [](double v) { return std::asin(v); });
  expect_unary("acos", xs, [](double v) { return std::acos(v); });
  expect_unary("atan", xs, [](double v) { return std::atan(v); });
  expect_unary("sinh", xs, [](double v) { return std::sinh(v); });
  expect_unary("cosh", xs, [](double v) { return std::cosh(v); });
  expect_unary("asinh", xs, [](double v) { return std::asinh(v); });
  expect_unary("acosh", xs, [](double v) { return std::acosh(v); });
  expect_unary("atanh", xs, [](double v) { return std::atanh(v); });
}

}  // namespace
}  // namespace kiln
