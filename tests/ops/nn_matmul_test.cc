// matmul and nn.dense against hand-computed products and a naive
// triple loop over explicitly broadcast batch indices written here.
#include "op_test_util.h"

namespace kiln {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::expect_error;
using testing::random_tensor;
using testing::run1;

// numpy.matmul spelled out: pad to rank >= 2, broadcast batch dims by hand.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, Shape* out_shape) {
  Shape as = a.shape(), bs = b.shape();
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  while (ab.size() < rank) ab.insert(ab.begin(), 1);
  while (bb.size() < rank) bb.insert(bb.begin(), 1);
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i) batch[i] = std::max(ab[i], bb[i]);
  *out_shape = batch;
  if (!a_vec) out_shape->push_back(m);
  if (!b_vec) out_shape->push_back(n);
  std::vector<double> out;
  int64_t nb = shape_numel(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    // Decompose the batch index and map it into each operand (size-1 dims repeat).
    int64_t rest = bi, a_off = 0, b_off = 0, a_mul = 1, b_mul = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t i = rest % batch[d];
      rest /= batch[d];
      a_off += (ab[d] == 1 ? 0 : i) * a_mul;
      b_off += (bb[d] == 1 ? 0 : i) * b_mul;
      a_mul *= ab[d];
      b_mul *= bb[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a.get_as_double(a_off * m * k + i * k + p) * b.get_as_double(b_off * k * n + p * n + j);
        out.push_back(s);
      }
  }
  return out;
}

TEST(Matmul, HandComputed) {
  Tensor a = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_floats({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor c = run1("matmul", {a, b});
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  expect_equal(c, {58, 64, 139, 154});
}

TEST(Matmul, OneDimensionalOperands) {
  Tensor v = Tensor::from_floats({3}, {1, 2, 3});
  Tensor m = Tensor::from_floats({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor dot = run1("matmul", {v, v});
  EXPECT_EQ(dot.shape(), Shape{});
  expect_equal(dot, {14});
  Tensor vm = run1("matmul", {v, m});
  EXPECT_EQ(vm.shape(), (Shape{2}));
  expect_equal(vm, {58, 64});
  Tensor mt = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor mv = run1("matmul", {mt, v});
  EXPECT_EQ(mv.shape(), (Shape{2}));
  expect_equal(mv, {14, 32});
}

TEST(Matmul, BatchedWithBroadcastingMatchesNaive) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 1, 3, 4}, {3, 4, 5}}, {{4, 6}, {2, 6, 3}},       {{5}, {2, 5, 3}},
      {{2, 3, 4}, {4}},          {{1, 2, 3}, {4, 1, 3, 2}}, {{3, 1, 2, 7}, {1, 4, 7, 2}},
      {{2, 0, 3}, {3, 4}},       {{2, 6, 9}, {9, 19}},      {{5, 33}, {33, 8}},
      {{9, 4}, {4, 17}},  // full 4x8 blocks and tails
  };
  uint32_t seed = 300;
  for (const auto& [as, bs] : cases) {
    Tensor a = random_tensor(as, DType::Float32, seed++);
    Tensor b = random_tensor(bs, DType::Float32, seed++);
    Shape shape;
    std::vector<double> want = naive_matmul(a, b, &shape);
    Tensor c = run1("matmul", {a, b});
    EXPECT_EQ(c.shape(), shape) << shape_str(as) << " @ " << shape_str(bs);
    expect_close(c, want, 1e-5, shape_str(as) + " @ " + shape_str(bs));
    // int8 of the same shapes is exact in int32.
    Tensor ai = random_tensor(as, DType::Int8, seed++);
    Tensor bi = random_tensor(bs, DType::Int8, seed++);
    Tensor ci = run1("matmul", {ai, bi});
    EXPECT_EQ(ci.dtype(), DType::Int32);
    expect_equal(ci, naive_matmul(ai, bi, &shape), "int8 " + shape_str(as));
  }
}

// Zero-point-shifted 8-bit values (ONNX MatMulInteger) as int32 operands,
// alone or mixed with 8-bit ones, accumulate exactly in int32.
TEST(Matmul, Int32OperandsAreExact) {
  // By hand: (A - 12) @ B for the rows of A = 11 7 3 / 10 6 2.
  Tensor a = Tensor::from_ints({2, 3}, {-1, -5, -9, -2, -6, -10}, DType::Int32);
  Tensor b = Tensor::from_ints({3, 2}, {1, 4, 2, 5, 3, 6}, DType::UInt8);
  Tensor c = run1("matmul", {a, b});
  EXPECT_EQ(c.dtype(), DType::Int32);
  expect_equal(c, {-38, -83, -44, -98});
  uint32_t seed = 700;
  for (const auto& [as, bs] : std::vector<std::pair<Shape, Shape>>{{{5, 33}, {33, 8}}, {{2, 3, 4}, {4, 9}}}) {
    Tensor ai = random_tensor(as, DType::Int32, seed++);
    Tensor bi = random_tensor(bs, DType::Int32, seed++);
    Shape shape;
    expect_equal(run1("matmul", {ai, bi}), naive_matmul(ai, bi, &shape), "int32 " + shape_str(as));
    Tensor b8 = random_tensor(bs, DType::UInt8, seed++);
    expect_equal(run1("matmul", {ai, b8}), naive_matmul(ai, b8, &shape), "int32 * uint8 " + shape_str(as));
  }
  Tensor w = Tensor::from_ints({2, 3}, {1, 0, -1, 2, 1, 0}, DType::Int32);
  expect_equal(run1("nn.dense", {a, w}), {-1 + 9, -2 - 5, -2 + 10, -4 - 6});
}

TEST(Matmul, Float16RoundsOnce) {
  Tensor a = random_tensor({3, 16}, DType::Float16, 1);
  Tensor b = random_tensor({16, 5}, DType::Float16, 2);
  Shape shape;
  std::vector<double> want = naive_matmul(a, b, &shape);
  Tensor c = run1("matmul", {a, b});
  EXPECT_EQ(c.dtype(), DType::Float16);
  expect_close(c, want, 1e-3);
  Tensor c32 = run1("matmul", {a, b}, {{"out_dtype", std::string("float32")}});
  EXPECT_EQ(c32.dtype(), DType::Float32);
  expect_close(c32, want, 1e-6);
}

TEST(Dense, MatchesTransposedProduct) {
  Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = Tensor::from_floats({2, 3}, {1, 0, -1, 2, 1, 0});
  Tensor y = run1("nn.dense", {x, w});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_equal(y, {1 - 3, 2 + 2, 4 - 6, 8 + 5});
  // Leading dims are kept; compare with a naive x @ w^T.
  Tensor x3 = random_tensor({2, 3, 7}, DType::Float32, 9);
  Tensor w3 = random_tensor({5, 7}, DType::Float32, 10);
  std::vector<double> want;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < 5; ++j) {
      double s = 0;
      for (int64_t p = 0; p < 7; ++p) s += x3.get_as_double(r * 7 + p) * w3.get_as_double(j * 7 + p);
      want.push_back(s);
    }
  Tensor y3 = run1("nn.dense", {x3, w3});
  EXPECT_EQ(y3.shape(), (Shape{2, 3, 5}));
  expect_close(y3, want, 1e-5);
  // uint8 x int8 accumulates exactly.
  Tensor xu = Tensor::from_ints({1, 4}, {255, 255, 255, 255}, DType::UInt8);
  Tensor wi = Tensor::from_ints({2, 4}, {-128, -128, -128, -128, 127, 1, 0, -1}, DType::Int8);
  Tensor yi = run1("nn.dense", {xu, wi});
  EXPECT_EQ(yi.dtype(), DType::Int32);
  expect_equal(yi, {-130560, 255 * 127});
}

TEST(MatmulDense, Errors) {
  Tensor a = Tensor::zeros({2, 3}, DType::Float32);
  expect_error(
      [&] {
        run1("matmul", {a, Tensor::zeros({4, 2}, DType::Float32)});
      },
      "matmul: a of shape (2, 3) has 3 columns but b of shape (4, 2) has 4 rows; they must be equal");
  expect_error(
      [&] {
        run1("matmul", {Tensor::zeros({2, 2, 3}, DType::Float32), Tensor::zeros({3, 3, 1}, DType::Float32)});
      },
      "matmul: shapes (2,) and (3,) do not broadcast");
  expect_error(
      [&] {
        run1("matmul", {a, Tensor::zeros({3, 2}, DType::Float16)});
      },
      "matmul: a has dtype float32 but b has dtype float16");
  expect_error(
      [&] {
        run1("matmul", {Tensor::zeros({2, 3}, DType::Int64), Tensor::zeros({3, 2}, DType::Int64)});
      },
      "matmul: a has dtype int64; expected one of float32, float16, int8, uint8, int32");
  expect_error(
      [&] {
        run1("matmul", {Tensor::zeros({2, 3}, DType::Int32), Tensor::zeros({3, 2}, DType::Float32)});
      },
      "matmul: a has dtype int32 but b has dtype float32; expected the same float dtype, or integers");
  expect_error(
      [&] {
        run1("nn.dense", {a, Tensor::zeros({4, 2}, DType::Float32)});
      },
      "nn.dense: weight of shape (4, 2) has K=2 but data of shape (2, 3) has K=3");
  expect_error(
      [&] {
        run1("nn.dense", {a, Tensor::zeros({3}, DType::Float32)});
      },
      "nn.dense: weight must be 2-D (units, K), got shape (3,)");
  expect_error(
      [&] {
        run1("nn.dense", {a, Tensor::zeros({4, 3}, DType::Float32)}, {{"out_dtype", std::string("f32")}});
      },
      "nn.dense: attribute 'out_dtype' = \"f32\" is not a dtype");
}

}  // namespace
}  // namespace kiln
