// simplify's integer rewrites against their arithmetic: random index
// expressions over two serial loops and one vectorized loop (so the
// vector forms simplify folds, ramps divided and taken apart again, appear
// after vectorize-loops), compiled through the whole tensor-IR pipeline and
// run, each element against the expression evaluated in C++ with
// truncating division, for 150 seeds. Offsets that are negative multiples
// of 8 and 16 exercise the rules' conditions (a base that may be negative,
// lanes that cross a multiple): loosening either makes this test fail.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "tir/text.h"
#include "tir/tir.h"
#include "tir/transform/passes.h"

namespace kiln::codegen {
namespace {

constexpr int64_t kI = 3, kJ = 5, kLanes = 16;

// An index expression over %i, %j and the vectorized %v: its text and its value.
struct Term {
  std::string text;
  std::function<int64_t(int64_t, int64_t, int64_t)> eval;
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : state_(seed) {}

  Term expression(int depth) {
    if (depth == 0) return leaf();
    switch (next(8)) {
      case 0:
      case 1: {
        // A reshape's index taken apart again: x / c * c + mod(x, c).
        Term x = affine();
        const int64_t c = divisor();
        auto f = x.eval;
        return {"(" + x.text + ") / " + std::to_string(c) + " * " + std::to_string(c) + " + mod(" + x.text +
                    ", " + std::to_string(c) + ")",
                [f, c](int64_t i, int64_t j, int64_t v) { return f(i, j, v) / c * c + f(i, j, v) % c; }};
      }
      case 2:
      case 6:
      case 7:
        return divided(affine(), next(2) == 0);
      case 3:
        return divided(expression(depth - 1), next(2) == 0);
      case 4:
        return combine(expression(depth - 1), expression(depth - 1), next(3));
      default:
        return affine();
    }
  }

 private:
  uint64_t next(uint64_t n) {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return (state_ >> 33) % n;
  }
  int64_t divisor() {
    static const int64_t kDivisors[] = {2, 5, 8, 16, 24, 32, 48, 64, 768};
    return kDivisors[next(sizeof kDivisors / sizeof kDivisors[0])];
  }
  Term leaf() {
    switch (next(4)) {
      case 0:
        return {"%i", [](int64_t i, int64_t, int64_t) { return i; }};
      case 1:
        return {"%j", [](int64_t, int64_t j, int64_t) { return j; }};
      case 2:
        return {"%v", [](int64_t, int64_t, int64_t v) { return v; }};
      default: {
        const int64_t c = int64_t(next(40)) - 8;
        return {std::to_string(c), [c](int64_t, int64_t, int64_t) { return c; }};
      }
    }
  }
  // (a %i + b %j) * k + %v (+ or - a constant): a ramp over %v whose base
  // is a multiple of k, possibly negative.
  Term affine() {
    static const int64_t kScales[] = {1, 3, 16, 32, 64};
    const int64_t a = int64_t(next(4)), b = int64_t(next(3)), k = kScales[next(5)];
    static const int64_t kOffsets[] = {-32, -16, -8, -5, 0, 3, 8, 16, 24};
    const int64_t off = kOffsets[next(sizeof kOffsets / sizeof kOffsets[0])];
    return {"(%i * " + std::to_string(a) + " + %j * " + std::to_string(b) + ") * " + std::to_string(k) +
                " + %v + " + (off < 0 ? "(0 - " + std::to_string(-off) + ")" : std::to_string(off)),
            [a, b, k, off](int64_t i, int64_t j, int64_t v) { return (i * a + j * b) * k + v + off; }};
  }
  Term divided(const Term& x, bool div) {
    const int64_t c = divisor();
    auto f = x.eval;
    return {(div ? "(" + x.text + ") / " : "mod(" + x.text + ", ") + std::to_string(c) + (div ? "" : ")"),
            [f, c, div](int64_t i, int64_t j, int64_t v) { return div ? f(i, j, v) / c : f(i, j, v) % c; }};
  }
  Term combine(const Term& a, const Term& b, uint64_t op) {
    static const char* kOps[] = {" + ", " - ", " * "};
    auto f = a.eval, g = b.eval;
    return {"(" + a.text + ")" + kOps[op] + "(" + b.text + ")", [f, g, op](int64_t i, int64_t j, int64_t v) {
              const int64_t x = f(i, j, v), y = g(i, j, v);
              return op == 0 ? x + y : op == 1 ? x - y : x * y;
            }};
  }
  uint64_t state_;
};

TEST(TirSimplify, RandomIndexExpressionsKeepTheirValues) {
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    Generator gen(seed);
    const Term t = gen.expression(2);
    const std::string text = "prim @f(%A: Buffer[(" + std::to_string(kI * kJ * kLanes) +
                             "), int32]) {\n"
                             "  for %i from 0 extent " +
                             std::to_string(kI) + " {\n    for %j from 0 extent " + std::to_string(kJ) +
                             " {\n      for %v from 0 extent " + std::to_string(kLanes) +
                             " vectorized {\n        %A[(%i * " + std::to_string(kJ) + " + %j) * " +
                             std::to_string(kLanes) + " + %v] = " + t.text +
                             "\n      }\n    }\n  }\n  return 0\n}\n";
    SCOPED_TRACE(text);
    tir::TirPassOptions options;
    options.vector_bytes = 64;
    auto fs = tir::parse_prim_functions(text, "random.kir");
    for (auto& f : fs) f = tir::lower_for_build(f, options);
    std::vector<int32_t> a(size_t(kI * kJ * kLanes), -7);
    JitModule::create(fs)->run("f", {a.data()});
    for (int64_t i = 0; i < kI; ++i)
      for (int64_t j = 0; j < kJ; ++j)
        for (int64_t v = 0; v < kLanes; ++v)
          ASSERT_EQ(a[size_t((i * kJ + j) * kLanes + v)], int32_t(t.eval(i, j, v)))
              << "i " << i << " j " << j << " v " << v;
  }
}

// `v` as a value of the integer type `t` holds it, as simplify keeps
// constants: wrapped to its width, unsigned ones zero-extended.
int64_t wrapped(int64_t v, tir::DataType t) {
  if (t.bits >= 64) return v;
  const uint64_t mask = (uint64_t(1) << t.bits) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (t.is_int() && (u >> (t.bits - 1)) & 1) u |= ~mask;
  return int64_t(u);
}

// shl and shr by every amount below the width, on signed and unsigned
// types of 8, 32 and 64 bits (values with the top bit set among them):
// the compiled shifts (shr: arithmetic for signed types, logical for
// unsigned ones; shl wrapping) against C++ and against simplify's folding
// of the same shift of constants.
TEST(TirSimplify, ShiftsFoldAsTheyRun) {
  for (const char* type : {"uint8", "int8", "uint32", "int32", "uint64", "int64"}) {
    const tir::DataType t = *tir::parse_dtype(type);
    const int64_t bits = t.bits;
    const std::vector<int64_t> values = {
        0, 1, 5, -1, -77, int64_t(1) << (bits - 1), (int64_t(1) << (bits - 2)) + 3};
    std::vector<int64_t> a, b;
    for (int64_t v : values)
      for (int64_t s = 0; s < bits; ++s) a.push_back(wrapped(v, t)), b.push_back(s);
    const std::string n = std::to_string(a.size()), buffer = "Buffer[(" + n + "), " + type + "]";
    const std::string text = "prim @f(%A: " + buffer + ", %B: " + buffer + ", %L: " + buffer +
                             ", %R: " + buffer + ") {\n  for %i from 0 extent " + n +
                             " {\n    %L[%i] = shl(%A[%i], %B[%i])\n    %R[%i] = shr(%A[%i], %B[%i])\n  }\n"
                             "  return 0\n}\n";
    SCOPED_TRACE(text);
    auto fs = tir::parse_prim_functions(text, "shifts.kir");
    for (auto& f : fs) f = tir::lower_for_build(f);
    // The elements in buffers of the type's width: each int64's low bytes.
    const size_t bytes = size_t(bits / 8);
    std::vector<char> A(a.size() * bytes), B(a.size() * bytes), L(a.size() * bytes), R(a.size() * bytes);
    for (size_t k = 0; k < a.size(); ++k) {
      std::memcpy(&A[k * bytes], &a[k], bytes);
      std::memcpy(&B[k * bytes], &b[k], bytes);
    }
    JitModule::create(fs)->run("f", {A.data(), B.data(), L.data(), R.data()});
    for (size_t k = 0; k < a.size(); ++k) {
      int64_t left = 0, right = 0;
      std::memcpy(&left, &L[k * bytes], bytes);
      std::memcpy(&right, &R[k * bytes], bytes);
      left = wrapped(left, t), right = wrapped(right, t);
      const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
      const int64_t want_left = wrapped(int64_t(uint64_t(a[k]) << b[k]), t);
      const int64_t want_right =
          t.is_uint() ? int64_t((uint64_t(a[k]) & mask) >> b[k]) : wrapped(a[k] >> b[k], t);
      EXPECT_EQ(left, want_left) << type << " " << a[k] << " shl " << b[k];
      EXPECT_EQ(right, want_right) << type << " " << a[k] << " shr " << b[k];
      for (auto [op, want] :
           {std::pair{tir::BinaryOp::Shl, want_left}, std::pair{tir::BinaryOp::Shr, want_right}}) {
        tir::Expr folded = tir::simplify_expr(tir::binary(op, tir::int_imm(a[k], t), tir::int_imm(b[k], t)));
        auto c = tir::as_const_int(folded);
        ASSERT_TRUE(c.has_value()) << tir::print_expr(folded);
        EXPECT_EQ(*c, want) << type << " " << a[k] << " " << tir::binary_op_text(op) << " " << b[k];
      }
    }
  }
  // An amount outside [0, bits) is left to run time.
  const tir::DataType u8 = tir::DataType::uint(8);
  EXPECT_FALSE(tir::as_const_int(
      tir::simplify_expr(tir::binary(tir::BinaryOp::Shl, tir::int_imm(1, u8), tir::int_imm(8, u8)))));
}

}  // namespace
}  // namespace kiln::codegen
