// The element types float64, int16, uint16, uint32, uint64 and bfloat16 in the
// reference kernels: astype with known bit patterns (bfloat16 rounds to
// nearest even), one elementwise op and one reduction per type against a
// plain loop written here, and bitshift.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kiln/runtime/error.h"
#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

const DType kNewTypes[] = {DType::Float64, DType::Int16,  DType::UInt16,
                           DType::UInt32,  DType::UInt64, DType::BFloat16};

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float bits_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(NewDTypes, NamesSizesAndKinds) {
  const char* names[] = {"float64", "int16", "uint16", "uint32", "uint64", "bfloat16"};
  const int bytes[] = {8, 2, 2, 4, 8, 2};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(dtype_name(kNewTypes[i]), names[i]);
    EXPECT_TRUE(dtype_from_name(names[i]) == kNewTypes[i]);
    EXPECT_EQ(dtype_bytes(kNewTypes[i]), bytes[i]);
  }
  EXPECT_TRUE(is_float(DType::Float64) && is_float(DType::BFloat16));
  EXPECT_TRUE(is_integer(DType::Int16) && is_unsigned(DType::UInt64) && !is_unsigned(DType::Int16));
  // The old values are stored in files and stay where they were.
  EXPECT_EQ(static_cast<int>(DType::Bool), 6);
  EXPECT_EQ(static_cast<int>(DType::BFloat16), 12);
}

// float32 -> bfloat16 bit patterns worked out by hand: the low 16 bits decide.
TEST(NewDTypes, Float32ToBFloat16RoundsToNearestEven) {
  struct Case {
    uint32_t f32;
    uint16_t bf16;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80},  // 1.0 exact
      {0x3f808000u, 0x3f80},  // exactly half way, 0x3f80 is even: down
      {0x3f818000u, 0x3f82},  // half way, 0x3f81 is odd: up
      {0x3f808001u, 0x3f81},  // above half way: up
      {0x3f807fffu, 0x3f80},  // below half way: down
      {0xc0490fdbu, 0xc049},  // -pi: -3.140625
      {0x7f7fffffu, 0x7f80},  // FLT_MAX rounds up to +inf
      {0x7f800000u, 0x7f80},  // +inf
      {0x00000001u, 0x0000},  // the smallest subnormal rounds to 0
  };
  Tensor x = Tensor::empty({9}, DType::Float32);
  for (int i = 0; i < 9; ++i) x.data<float>()[i] = bits_float(cases[i].f32);
  Tensor y = run1("astype", {x}, {{"dtype", std::string("bfloat16")}});
  ASSERT_EQ(y.dtype(), DType::BFloat16);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(y.data<uint16_t>()[i], cases[i].bf16) << i;
  // A NaN whose payload is only in the dropped bits stays a NaN.
  Tensor nan = Tensor::empty({1}, DType::Float32);
  nan.data<float>()[0] = bits_float(0x7f800001u);
  uint16_t b = run1("astype", {nan}, {{"dtype", std::string("bfloat16")}}).data<uint16_t>()[0];
  EXPECT_TRUE(std::isnan(bfloat16_to_float(b))) << b;
  // Back to float32 is exact.
  Tensor back = run1("astype", {y}, {{"dtype", std::string("float32")}});
  EXPECT_EQ(float_bits(back.data<float>()[5]), 0xc0490000u);
}

TEST(NewDTypes, CastsBetweenTheNewTypes) {
  Tensor d = Tensor::empty({5}, DType::Float64);
  const double dv[] = {1.0 / 3.0, -2.5, 70000.5, -1e300, 4294967296.0 + 7};
  for (int i = 0; i < 5; ++i) d.data<double>()[i] = dv[i];
  Tensor f = run1("astype", {d}, {{"dtype", std::string("float32")}});
  EXPECT_EQ(f.data<float>()[0], static_cast<float>(1.0 / 3.0));
  EXPECT_TRUE(std::isinf(f.data<float>()[3]) && f.data<float>()[3] < 0);
  Tensor i16 = run1("astype", {d}, {{"dtype", std::string("int16")}});
  // Truncates toward zero and saturates.
  EXPECT_EQ(values(i16), (std::vector<double>{0, -2, 32767, -32768, 32767}));
  Tensor u32 = run1("astype", {d}, {{"dtype", std::string("uint32")}});
  EXPECT_EQ(values(u32), (std::vector<double>{0, 0, 70000, 0, 4294967295.0}));
  Tensor u64 = run1("astype", {d}, {{"dtype", std::string("uint64")}});
  EXPECT_EQ(u64.data<uint64_t>()[4], 4294967303ull);
  // float64 -> float16 rounds once: 1 + 2^-11 + 2^-40 is just above half way
  // between two halves, so it rounds up (through float32 it would tie and go down).
  Tensor h = Tensor::empty({1}, DType::Float64);
  h.data<double>()[0] = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(run1("astype", {h}, {{"dtype", std::string("float16")}}).data<uint16_t>()[0], 0x3c01);
  // int -> narrower unsigned wraps like C.
  Tensor neg = Tensor::from_ints({2}, {-1, 65537}, DType::Int64);
  EXPECT_EQ(values(run1("astype", {neg}, {{"dtype", std::string("uint16")}})),
            (std::vector<double>{65535, 1}));
}

// add and maximum against a loop over doubles of the stored values (exact for
// these small values), and sum against a loop.
TEST(NewDTypes, AddMaximumAndSumMatchAPlainLoop) {
  for (DType t : kNewTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor a = Tensor::empty({3, 4}, t), b = Tensor::empty({4}, t);
    for (int64_t i = 0; i < 12; ++i)
      a.set_from_double(i, is_unsigned(t) ? double(i * 3 % 7) : double(i - 5) * 0.5);
    for (int64_t i = 0; i < 4; ++i) b.set_from_double(i, is_unsigned(t) ? double(i + 1) : 1.5 - double(i));
    if (is_integer(t))
      for (int64_t i = 0; i < 12; ++i) a.set_from_double(i, std::trunc(a.get_as_double(i)));
    Tensor sum = run1("add", {a, b});
    Tensor mx = run1("maximum", {a, b});
    ASSERT_EQ(sum.dtype(), t);
    for (int64_t i = 0; i < 12; ++i) {
      double x = a.get_as_double(i), z = b.get_as_double(i % 4);
      double want = x + z;
      if (is_integer(t)) want = std::trunc(x) + std::trunc(z);
      EXPECT_EQ(sum.get_as_double(i), want) << i;
      EXPECT_EQ(mx.get_as_double(i), std::max(x, z)) << i;
    }
    Tensor s = run1("sum", {a}, {{"axis", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
    ASSERT_EQ(s.shape(), (Shape{3}));
    for (int64_t r = 0; r < 3; ++r) {
      double want = 0;
      for (int64_t c = 0; c < 4; ++c) want += a.get_as_double(r * 4 + c);
      EXPECT_EQ(s.get_as_double(r), want) << r;
    }
  }
}

TEST(NewDTypes, UnsignedArithmeticWrapsAndModIsExact) {
  Tensor a = Tensor::empty({2}, DType::UInt64), b = Tensor::empty({2}, DType::UInt64);
  a.data<uint64_t>()[0] = 0;
  a.data<uint64_t>()[1] = std::numeric_limits<uint64_t>::max();
  b.data<uint64_t>()[0] = 1;
  b.data<uint64_t>()[1] = 10;
  Tensor d = run1("subtract", {a, b});
  EXPECT_EQ(d.data<uint64_t>()[0], std::numeric_limits<uint64_t>::max());
  Tensor m = run1("mod", {a, b});
  EXPECT_EQ(m.data<uint64_t>()[1], std::numeric_limits<uint64_t>::max() % 10);
  Tensor i = Tensor::from_ints({2}, {-7, 7}, DType::Int16), j = Tensor::from_ints({2}, {3, -3}, DType::Int16);
  EXPECT_EQ(values(run1("mod", {i, j})), (std::vector<double>{2, -2}));  // the sign of the divisor
  Tensor f = Tensor::empty({1}, DType::Float64), g = Tensor::empty({1}, DType::Float64);
  f.data<double>()[0] = -4.3;
  g.data<double>()[0] = 2.1;
  EXPECT_DOUBLE_EQ(run1("fmod", {f, g}).data<double>()[0], std::fmod(-4.3, 2.1));
  EXPECT_DOUBLE_EQ(run1("exp", {g}).data<double>()[0], std::exp(2.1));  // computed in double
}

TEST(NewDTypes, CumsumInFloat64) {
  Tensor x = Tensor::empty({4}, DType::Float64);
  const double v[] = {0.1, 0.2, 1e-17, 0.3};
  for (int i = 0; i < 4; ++i) x.data<double>()[i] = v[i];
  Tensor y = run1("cumsum", {x}, {{"axis", int64_t{0}}});
  double acc = 0;
  for (int i = 0; i < 4; ++i) {
    acc += v[i];
    EXPECT_EQ(y.data<double>()[i], acc) << i;
  }
}

TEST(BitShift, ShiftsEachUnsignedType) {
  for (DType t : {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor x = Tensor::from_ints({4}, {16, 4, 1, 255}, t), s = Tensor::from_ints({4}, {1, 2, 0, 3}, t);
    std::vector<double> left, right;
    for (int i = 0; i < 4; ++i) {
      uint64_t xv = static_cast<uint64_t>(x.get_as_double(i)), sv = static_cast<uint64_t>(s.get_as_double(i));
      uint64_t mask = dtype_bytes(t) == 8 ? ~0ull : (1ull << (8 * dtype_bytes(t))) - 1;
      left.push_back(static_cast<double>((xv << sv) & mask));
      right.push_back(static_cast<double>(xv >> sv));
    }
    EXPECT_EQ(values(run1("bitshift", {x, s}, {{"direction", std::string("left")}})), left);
    EXPECT_EQ(values(run1("bitshift", {x, s}, {{"direction", std::string("right")}})), right);
  }
  // Broadcast, and a shift by the width or more gives 0.
  Tensor x = Tensor::from_ints({2, 2}, {1, 2, 3, 128}, DType::UInt8),
         s = Tensor::from_ints({2}, {8, 1}, DType::UInt8);
  EXPECT_EQ(values(run1("bitshift", {x, s}, {{"direction", std::string("left")}})),
            (std::vector<double>{0, 4, 0, 0}));
}

TEST(BitShift, BadInputsAreNamedErrors) {
  Tensor u = Tensor::from_ints({2}, {1, 2}, DType::UInt8);
  Tensor i = Tensor::from_ints({2}, {1, 2}, DType::Int32);
  Tensor u16 = Tensor::from_ints({2}, {1, 2}, DType::UInt16);
  expect_error(
      [&] {
        run1("bitshift", {i, i}, {{"direction", std::string("left")}});
      },
      "bitshift: input 0 has dtype int32; expected one of uint8, uint16, uint32, uint64");
  expect_error(
      [&] {
        run1("bitshift", {u, u}, {{"direction", std::string("up")}});
      },
      "bitshift: attribute 'direction' = \"up\" is not supported");
  expect_error(
      [&] {
        run1("bitshift", {u, u16}, {{"direction", std::string("left")}});
      },
      "bitshift: inputs have different dtypes uint8 and uint16");
}

}  // namespace
}  // namespace kiln
