// Shape ops (reshape, permute_dims, concat, split, strided_slice, flatten,
// squeeze, expand_dims, broadcast_to, take, gather_elements, where, trilu)
// against hand-computed values and index arithmetic written out in the tests.
#include <limits>

#include "op_test_util.h"

namespace kiln {
namespace {

using testing::expect_equal;
using testing::expect_error;
using testing::op_named;
using testing::random_tensor;
using testing::run1;
using testing::values;

std::vector<int64_t> ints(std::initializer_list<int64_t> v) { return v; }

Tensor iota(const Shape& shape, DType dtype = DType::Float32) {
  Tensor t = Tensor::empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, static_cast<double>(i));
  return t;
}

std::vector<double> range(int64_t lo, int64_t hi) {
  std::vector<double> v;
  for (int64_t i = lo; i < hi; ++i) v.push_back(static_cast<double>(i));
  return v;
}

TEST(Reshape, InfersMinusOne) {
  Tensor y = run1("reshape", {iota({2, 3, 4})}, {{"newshape", ints({4, -1})}});
  EXPECT_EQ(y.shape(), (Shape{4, 6}));
  expect_equal(y, range(0, 24));
  expect_error(
      [&] {
        run1("reshape", {iota({2, 3})}, {{"newshape", ints({-1, -1})}});
      },
      "reshape: attribute 'newshape' = [-1, -1] has more than one -1");
  expect_error(
      [&] {
        run1("reshape", {iota({2, 3})}, {{"newshape", ints({4, -1})}});
      },
      "reshape: cannot infer the -1 in newshape [4, -1] for data (2, 3) of 6 elements");
  expect_error(
      [&] {
        run1("reshape", {iota({2, 3})}, {{"newshape", ints({5})}});
      },
      "reshape: newshape [5] has 5 elements but data (2, 3) has 6");
}

TEST(PermuteDims, ReverseAndNegativeAxes) {
  Tensor x = iota({2, 3, 4});
  Tensor r = run1("permute_dims", {x});
  EXPECT_EQ(r.shape(), (Shape{4, 3, 2}));
  std::vector<double> want;
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t i = 0; i < 2; ++i) want.push_back(static_cast<double>(i * 12 + j * 4 + k));
  expect_equal(r, want);
  Tensor p = run1("permute_dims", {x}, {{"axes", ints({-2, 0, -1})}});
  EXPECT_EQ(p.shape(), (Shape{3, 2, 4}));
  want.clear();
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 4; ++k) want.push_back(static_cast<double>(i * 12 + j * 4 + k));
  expect_equal(p, want);
  // Works on 1-byte and 2-byte dtypes alike.
  Tensor xi = iota({2, 3}, DType::Int8);
  expect_equal(run1("permute_dims", {xi}), {0, 3, 1, 4, 2, 5});
  Tensor xh = iota({2, 3}, DType::Float16);
  expect_equal(run1("permute_dims", {xh}), {0, 3, 1, 4, 2, 5});
  expect_error(
      [&] {
        run1("permute_dims", {x}, {{"axes", ints({0, 2, -1})}});
      },
      "permute_dims: attribute 'axes' repeats axis 2");
  expect_error(
      [&] {
        run1("permute_dims", {x}, {{"axes", ints({1, 0})}});
      },
      "permute_dims: attribute 'axes' = [1, 0] must list all 3 axes of data (2, 3, 4)");
}

TEST(Concat, NegativeAxisAndUnequalSizes) {
  Tensor a = iota({2, 2});
  Tensor b = Tensor::from_floats({2, 1}, {10, 11});
  Tensor y = run1("concat", {a, b, a}, {{"axis", int64_t{-1}}});
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  expect_equal(y, {0, 1, 10, 0, 1, 2, 3, 11, 2, 3});
  Tensor z = run1("concat", {a, Tensor::from_floats({1, 2}, {7, 8})});
  EXPECT_EQ(z.shape(), (Shape{3, 2}));
  expect_equal(z, {0, 1, 2, 3, 7, 8});
  Tensor bools =
      run1("concat", {Tensor::from_ints({2}, {1, 0}, DType::Bool), Tensor::from_ints({1}, {1}, DType::Bool)});
  EXPECT_EQ(bools.dtype(), DType::Bool);
  expect_equal(bools, {1, 0, 1});
  expect_error(
      [&] {
        run1("concat", {a, iota({3, 3})});
      },
      "concat: input 1 has shape (3, 3) but input 0 has shape (2, 2); all dims except axis 0 must match");
  expect_error(
      [&] {
        run1("concat", {a, iota({2, 2}, DType::Int8)});
      },
      "concat: input 1 has dtype int8 but input 0 has dtype float32");
}

TEST(Split, SectionsAndSizes) {
  Tensor x = iota({2, 6});
  std::vector<Tensor> parts =
      run_op(op_named("split"), {x}, {{"axis", int64_t{-1}}, {"sections", int64_t{3}}});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(op_named("split").tuple_output);
  EXPECT_EQ(parts[1].shape(), (Shape{2, 2}));
  expect_equal(parts[0], {0, 1, 6, 7});
  expect_equal(parts[1], {2, 3, 8, 9});
  expect_equal(parts[2], {4, 5, 10, 11});
  std::vector<Tensor> sized =
      run_op(op_named("split"), {x}, {{"axis", int64_t{1}}, {"sizes", ints({1, 0, 5})}});
  ASSERT_EQ(sized.size(), 3u);
  EXPECT_EQ(sized[1].shape(), (Shape{2, 0}));
  expect_equal(sized[0], {0, 6});
  expect_equal(sized[2], {1, 2, 3, 4, 5, 7, 8, 9, 10, 11});
  std::vector<Tensor> one = run_op(op_named("split"), {x}, {{"sections", int64_t{1}}});
  ASSERT_EQ(one.size(), 1u);
  expect_equal(one[0], range(0, 12));
  expect_error(
      [&] {
        run_op(op_named("split"), {x}, {{"axis", int64_t{1}}, {"sections", int64_t{4}}});
      },
      "split: attribute 'sections' = 4 does not divide axis 1 of size 6");
  expect_error(
      [&] {
        run_op(op_named("split"), {x}, {{"sections", int64_t{2}}, {"sizes", ints({1, 1})}});
      },
      "split: give exactly one of attribute 'sections' (equal parts) or 'sizes'");
  expect_error([&] { run_op(op_named("split"), {x}, {}); }, "split: give exactly one of");
  expect_error(
      [&] {
        run_op(op_named("split"), {x}, {{"axis", int64_t{1}}, {"sizes", ints({2, 3})}});
      },
      "split: attribute 'sizes' = [2, 3] sums to 5 but axis 1 of data (2, 6) has size 6");
}

TEST(StridedSlice, NumpySemantics) {
  Tensor x = iota({10});
  auto slice = [&](int64_t b, int64_t e, int64_t s) {
    return values(
        run1("strided_slice", {x}, {{"begin", ints({b})}, {"end", ints({e})}, {"strides", ints({s})}}));
  };
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(slice(2, 8, 2), (std::vector<double>{2, 4, 6}));                             // x[2:8:2]
  EXPECT_EQ(slice(-3, big, 1), (std::vector<double>{7, 8, 9}));                          // x[-3:]
  EXPECT_EQ(slice(8, 2, -2), (std::vector<double>{8, 6, 4}));                            // x[8:2:-2]
  EXPECT_EQ(slice(-1, small, -1), (std::vector<double>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));  // x[::-1]
  EXPECT_EQ(slice(-100, 3, 1), (std::vector<double>{0, 1, 2}));                          // clamped begin
  EXPECT_EQ(slice(5, 2, 1), (std::vector<double>{}));                                    // empty
  EXPECT_EQ(slice(100, -100, -3), (std::vector<double>{9, 6, 3, 0}));
  EXPECT_EQ(slice(1, -1, big), (std::vector<double>{1}));
  // 2-D, slicing only the last axis through a negative axis index.
  Tensor m = iota({3, 4});
  Tensor y = run1("strided_slice", {m},
                  {{"begin", ints({-1})}, {"end", ints({0})}, {"strides", ints({-2})}, {"axes", ints({-1})}});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expect_equal(y, {3, 1, 7, 5, 11, 9});
  // Both axes, default strides.
  Tensor z = run1("strided_slice", {m}, {{"begin", ints({1, 1})}, {"end", ints({3, 3})}});
  EXPECT_EQ(z.shape(), (Shape{2, 2}));
  expect_equal(z, {5, 6, 9, 10});
  expect_error([&] { slice(0, 5, 0); }, "strided_slice: attribute 'strides' = [0] has a 0");
  expect_error(
      [&] {
        run1("strided_slice", {m}, {{"begin", ints({0})}, {"end", ints({1, 2})}});
      },
      "strided_slice: attribute 'end' has 2 values but 'begin' has 1");
  expect_error(
      [&] {
        run1("strided_slice", {m}, {{"begin", ints({0})}, {"end", ints({1})}, {"axes", ints({2})}});
      },
      "strided_slice: attribute 'axes' = 2 is out of range for rank 2");
}

TEST(Flatten, Axis) {
  Tensor x = iota({2, 3, 4});
  EXPECT_EQ(run1("flatten", {x}).shape(), (Shape{2, 12}));
  EXPECT_EQ(run1("flatten", {x}, {{"axis", int64_t{0}}}).shape(), (Shape{1, 24}));
  EXPECT_EQ(run1("flatten", {x}, {{"axis", int64_t{-1}}}).shape(), (Shape{6, 4}));
  EXPECT_EQ(run1("flatten", {x}, {{"axis", int64_t{3}}}).shape(), (Shape{24, 1}));
  expect_equal(run1("flatten", {x}, {{"axis", int64_t{2}}}), range(0, 24));
  expect_error(
      [&] {
        run1("flatten", {x}, {{"axis", int64_t{4}}});
      },
      "flatten: attribute 'axis' = 4 is out of range for rank 3 (expected -3..3)");
}

TEST(Squeeze, AllOrListed) {
  Tensor x = iota({1, 3, 1, 2});
  EXPECT_EQ(run1("squeeze", {x}).shape(), (Shape{3, 2}));
  Tensor y = run1("squeeze", {x}, {{"axis", ints({-2})}});
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2}));
  expect_equal(y, range(0, 6));
  expect_error(
      [&] {
        run1("squeeze", {x}, {{"axis", ints({1})}});
      },
      "squeeze: axis 1 of data (1, 3, 1, 2) has size 3; only size-1 axes can be squeezed");
}

TEST(ExpandDims, AxisAndCount) {
  Tensor x = iota({2, 3});
  EXPECT_EQ(run1("expand_dims", {x}, {{"axis", int64_t{0}}}).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(run1("expand_dims", {x}, {{"axis", int64_t{-1}}}).shape(), (Shape{2, 3, 1}));
  Tensor y = run1("expand_dims", {x}, {{"axis", int64_t{1}}, {"num_newaxis", int64_t{2}}});
  EXPECT_EQ(y.shape(), (Shape{2, 1, 1, 3}));
  expect_equal(y, range(0, 6));
  EXPECT_EQ(run1("expand_dims", {x}, {{"axis", int64_t{-2}}}).shape(), (Shape{2, 1, 3}));
  expect_error(
      [&] {
        run1("expand_dims", {x}, {{"axis", int64_t{4}}});
      },
      "expand_dims: attribute 'axis' = 4 is out of range for rank 3");
  expect_error([&] { run1("expand_dims", {x}); }, "expand_dims: missing required attribute 'axis'");
}

TEST(BroadcastTo, Values) {
  Tensor x = Tensor::from_floats({3, 1}, {1, 2, 3});
  Tensor y = run1("broadcast_to", {x}, {{"shape", ints({2, 3, 2})}});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  expect_equal(y, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  Tensor s = run1("broadcast_to", {Tensor::from_ints({}, {5}, DType::Int64)}, {{"shape", ints({2})}});
  expect_equal(s, {5, 5});
  expect_error(
      [&] {
        run1("broadcast_to", {x}, {{"shape", ints({2, 2})}});
      },
      "broadcast_to: data of shape (3, 1) cannot be broadcast to attribute 'shape' = [2, 2]");
}

TEST(Take, AxisAndNegativeIndices) {
  Tensor x = iota({2, 3, 2});
  Tensor idx = Tensor::from_ints({2, 2}, {2, -3, -1, 0}, DType::Int32);
  Tensor y = run1("take", {x, idx}, {{"axis", int64_t{-2}}});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2, 2}));
  std::vector<double> want;
  const int64_t rows[] = {2, 0, 2, 0};
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t r : rows)
      for (int64_t k = 0; k < 2; ++k) want.push_back(static_cast<double>(i * 6 + r * 2 + k));
  expect_equal(y, want);
  Tensor flat = run1("take", {Tensor::from_ints({3}, {7, 8, 9}, DType::Int8), Tensor::from_ints({}, {1})});
  EXPECT_EQ(flat.shape(), Shape{});
  expect_equal(flat, {8});
  expect_error(
      [&] {
        run1("take", {x, Tensor::from_ints({2}, {0, 3})}, {{"axis", int64_t{1}}});
      },
      "take: index 3 (at position 1 of indices) is out of range for axis 1 of size 3 (expected -3..2)");
  expect_error(
      [&] {
        run1("take", {x, Tensor::from_floats({1}, {0})});
      },
      "take: indices has dtype float32; expected one of int32, int64");
}

TEST(Where, Broadcasting) {
  Tensor cond = Tensor::from_ints({3, 1}, {1, 0, 1}, DType::Bool);
  Tensor x = Tensor::from_floats({1, 4}, {1, 2, 3, 4});
  Tensor y = Tensor::from_floats({}, {-1});
  Tensor z = run1("where", {cond, x, y});
  EXPECT_EQ(z.shape(), (Shape{3, 4}));
  expect_equal(z, {1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4});
  // Same shapes, int8 values.
  Tensor c2 = random_tensor({5}, DType::Bool, 3);
  Tensor a = random_tensor({5}, DType::Int8, 4), b = random_tensor({5}, DType::Int8, 5);
  Tensor w = run1("where", {c2, a, b});
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(w.get_as_double(i), c2.get_as_double(i) != 0 ? a.get_as_double(i) : b.get_as_double(i));
  expect_error([&] { run1("where", {x, x, x}); }, "where: cond has dtype float32; expected bool");
  expect_error(
      [&] {
        run1("where", {cond, x, Tensor::zeros({2}, DType::Float32)});
      },
      "where: shapes (3, 4) and (2,) do not broadcast");
  expect_error(
      [&] {
        run1("where", {cond, x, Tensor::zeros({1}, DType::Int32)});
      },
      "where: x has dtype float32 but y has dtype int32; they must match");
}

TEST(GatherElements, HandValues) {
  // The ONNX example: data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]], axis 1.
  Tensor data = Tensor::from_floats({2, 2}, {1, 2, 3, 4});
  Tensor idx = Tensor::from_ints({2, 2}, {0, 0, 1, 0});
  expect_equal(run1("gather_elements", {data, idx}, {{"axis", int64_t{1}}}), {1, 1, 4, 3});
  // Axis 0 with fewer columns than data and negative indices: out[i][j] = data[idx[i][j]][j].
  Tensor d3 = iota({3, 3});
  Tensor i0 = Tensor::from_ints({2, 2}, {1, -1, 0, 2}, DType::Int32);
  Tensor y = run1("gather_elements", {d3, i0});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_equal(y, {3, 7, 0, 7});
}

TEST(GatherElements, AgainstNaive3d) {
  Tensor data = random_tensor({2, 3, 4}, DType::Int8, 7);
  for (int64_t axis = 0; axis < 3; ++axis) {
    Shape ishape = {2, 2, 3};
    ishape[static_cast<size_t>(axis)] = 5;  // the gathered axis may be longer than data's
    Tensor idx = Tensor::empty(ishape, DType::Int64);
    testing::Lcg rng(static_cast<uint32_t>(axis) + 1);
    int64_t size = data.shape()[static_cast<size_t>(axis)];
    for (int64_t p = 0; p < idx.numel(); ++p) idx.data<int64_t>()[p] = rng.integer(-size, size - 1);
    Tensor y = run1("gather_elements", {data, idx}, {{"axis", axis}});
    EXPECT_EQ(y.shape(), ishape);
    EXPECT_EQ(y.dtype(), DType::Int8);
    for (int64_t i = 0; i < ishape[0]; ++i)
      for (int64_t j = 0; j < ishape[1]; ++j)
        for (int64_t k = 0; k < ishape[2]; ++k) {
          int64_t p = (i * ishape[1] + j) * ishape[2] + k;
          std::vector<int64_t> at = {i, j, k};
          int64_t v = idx.data<int64_t>()[p];
          at[static_cast<size_t>(axis)] = v < 0 ? v + size : v;
          EXPECT_EQ(y.get_as_double(p), data.get_as_double((at[0] * 3 + at[1]) * 4 + at[2]))
              << "axis " << axis;
        }
  }
}

TEST(GatherElements, Errors) {
  Tensor data = iota({2, 3});
  expect_error(
      [&] {
        run1("gather_elements", {data, Tensor::from_ints({2}, {0, 1})});
      },
      "gather_elements: indices (2,) must have the rank of data (2, 3)");
  expect_error(
      [&] {
        run1("gather_elements", {data, Tensor::from_ints({3, 1}, {0, 1, 0})}, {{"axis", int64_t{1}}});
      },
      "gather_elements: indices (3, 1) exceed data (2, 3) on axis 0");
  expect_error(
      [&] {
        run1("gather_elements", {data, Tensor::from_ints({1, 1}, {3})}, {{"axis", int64_t{1}}});
      },
      "gather_elements: index 3 (at position 0 of indices) is out of range for axis 1 of size 3");
  expect_error(
      [&] {
        run1("gather_elements", {data, iota({1, 1})});
      },
      "gather_elements: indices has dtype float32; expected one of int32, int64");
}

TEST(Trilu, UpperLowerAndOffsets) {
  // [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
  Tensor x = iota({3, 4});
  expect_equal(run1("trilu", {x}), {0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11});
  expect_equal(run1("trilu", {x}, {{"upper", int64_t{0}}}), {0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0});
  expect_equal(run1("trilu", {x}, {{"k", int64_t{1}}}), {0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11});
  expect_equal(run1("trilu", {x}, {{"k", int64_t{-1}}, {"upper", int64_t{0}}}),
               {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0});
  // k past the matrix: everything or nothing.
  expect_equal(run1("trilu", {x}, {{"k", int64_t{5}}}), std::vector<double>(12, 0));
  expect_equal(run1("trilu", {x}, {{"k", int64_t{-7}}}), range(0, 12));
  // A batch of two 2x2 bool matrices (all true): lower keeps three of four.
  Tensor b = Tensor::from_ints({2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1}, DType::Bool);
  expect_equal(run1("trilu", {b}, {{"upper", int64_t{0}}}), {1, 0, 1, 1, 1, 0, 1, 1});
  expect_error([&] { run1("trilu", {iota({3})}); }, "trilu: input x must have rank >= 2");
  expect_error(
      [&] {
        run1("trilu", {x}, {{"upper", int64_t{2}}});
      },
      "trilu: attribute 'upper' must be 0 or 1, got 2");
}

}  // namespace
}  // namespace kiln
