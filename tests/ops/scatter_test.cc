// gather_nd, scatter_nd and scatter_elements against hand-computed values
// (the examples of the ONNX operator documents, worked out by hand) and
// index arithmetic written out here.
#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

Tensor iota(const Shape& shape, DType dtype = DType::Float32) {
  Tensor t = Tensor::empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, static_cast<double>(i));
  return t;
}

TEST(GatherNd, TuplesOfEachLength) {
  // data [[0, 1], [2, 3]]: full tuples pick elements, 1-tuples pick rows.
  Tensor d = iota({2, 2}, DType::Int32);
  Tensor y = run1("gather_nd", {d, Tensor::from_ints({2, 2}, {0, 0, 1, 1})});
  EXPECT_EQ(y.shape(), (Shape{2}));
  expect_equal(y, {0, 3});
  Tensor rows = run1("gather_nd", {d, Tensor::from_ints({2, 1}, {1, -2})});
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  expect_equal(rows, {2, 3, 0, 1});
  // data (2, 2, 2) = 0..7, indices [[[0, 1]], [[1, 0]]] of shape (2, 1, 2): rows 2, 3 and 4, 5.
  Tensor d3 = iota({2, 2, 2});
  Tensor z = run1("gather_nd", {d3, Tensor::from_ints({2, 1, 2}, {0, 1, 1, 0})});
  EXPECT_EQ(z.shape(), (Shape{2, 1, 2}));
  expect_equal(z, {2, 3, 4, 5});
}

TEST(GatherNd, BatchDims) {
  // batch_dims 1: batch 0 picks row 1 of [[0, 1], [2, 3]], batch 1 row 0 of [[4, 5], [6, 7]].
  Tensor d = iota({2, 2, 2});
  Tensor y = run1("gather_nd", {d, Tensor::from_ints({2, 1}, {1, 0})}, {{"batch_dims", int64_t{1}}});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_equal(y, {2, 3, 4, 5});
  // Full tuples per batch: (2, 2, 2) indices -> element picks.
  Tensor e = run1("gather_nd", {d, Tensor::from_ints({2, 2, 2}, {0, 1, 1, 1, 1, 0, 0, 0})},
                  {{"batch_dims", int64_t{1}}});
  EXPECT_EQ(e.shape(), (Shape{2, 2}));
  expect_equal(e, {1, 3, 6, 4});
}

TEST(GatherNd, Errors) {
  Tensor d = iota({2, 3});
  expect_error(
      [&] {
        run1("gather_nd", {d, Tensor::from_ints({1, 3}, {0, 0, 0})});
      },
      "gather_nd: index tuples of length 3 (the last dim of indices (1, 3)) must be 1..2");
  expect_error(
      [&] {
        run1("gather_nd", {d, Tensor::from_ints({1, 2}, {0, 3})});
      },
      "gather_nd: index 3 (at position 1 of indices) is out of range for axis 1 of size 3");
  expect_error(
      [&] {
        run1("gather_nd", {d, Tensor::from_ints({3, 1}, {0, 1, 0})}, {{"batch_dims", int64_t{1}}});
      },
      "gather_nd: the batch dims of data (2, 3) and indices (3, 1) differ");
  expect_error(
      [&] {
        run1("gather_nd", {d, Tensor::from_ints({}, {0})});
      },
      "gather_nd: indices must have rank >= 1");
}

TEST(ScatterNd, SlicesAndReductions) {
  // The ONNX example: data 1..8, indices [[4], [3], [1], [7]], updates 9..12.
  Tensor d = tensor_of({8}, DType::Float32, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor i = Tensor::from_ints({4, 1}, {4, 3, 1, 7});
  Tensor u = tensor_of({4}, DType::Float32, {9, 10, 11, 12});
  expect_equal(run1("scatter_nd", {d, i, u}), {1, 11, 3, 10, 9, 6, 7, 12});
  // Duplicates accumulate with add and mul.
  Tensor dup = Tensor::from_ints({2, 1}, {0, 0});
  Tensor two = tensor_of({2}, DType::Float32, {2, 3});
  expect_equal(run1("scatter_nd", {d, dup, two}, {{"reduction", std::string("add")}}),
               {6, 2, 3, 4, 5, 6, 7, 8});
  expect_equal(run1("scatter_nd", {d, dup, two}, {{"reduction", std::string("mul")}}),
               {6, 2, 3, 4, 5, 6, 7, 8});
  expect_equal(run1("scatter_nd", {d, dup, two}, {{"reduction", std::string("max")}}),
               {3, 2, 3, 4, 5, 6, 7, 8});
  expect_equal(run1("scatter_nd", {d, dup, two}, {{"reduction", std::string("min")}}),
               {1, 2, 3, 4, 5, 6, 7, 8});
  // Row slices of a (3, 2) int8 matrix: row -1 (the last) and row 0.
  Tensor m = iota({3, 2}, DType::Int8);
  Tensor rows = tensor_of({2, 2}, DType::Int8, {-1, -2, -3, -4});
  expect_equal(run1("scatter_nd", {m, Tensor::from_ints({2, 1}, {-1, 0}), rows}), {-3, -4, 2, 3, -1, -2});
}

TEST(ScatterNd, Errors) {
  Tensor d = iota({2, 3});
  expect_error(
      [&] {
        run1("scatter_nd", {d, Tensor::from_ints({1, 1}, {0}), iota({1, 2})});
      },
      "scatter_nd: updates have shape (1, 2); data (2, 3) and indices (1, 1) need (1, 3)");
  expect_error(
      [&] {
        run1("scatter_nd", {d, Tensor::from_ints({1, 1}, {0}), iota({1, 3}, DType::Int32)});
      },
      "scatter_nd: updates have dtype int32 but data has float32");
  expect_error(
      [&] {
        run1("scatter_nd", {d, Tensor::from_ints({1, 1}, {0}), iota({1, 3})},
             {{"reduction", std::string("sum")}});
      },
      "scatter_nd: attribute 'reduction' = \"sum\" is not one of none, add, mul, max, min");
  Tensor b = tensor_of({2}, DType::Bool, {0, 1});
  expect_error(
      [&] {
        run1("scatter_nd", {b, Tensor::from_ints({1, 1}, {0}), tensor_of({1}, DType::Bool, {1})},
             {{"reduction", std::string("add")}});
      },
      "scatter_nd: reduction \"add\" is not defined for bool data");
}

TEST(ScatterElements, AxesAndNegativeIndices) {
  // The ONNX example (axis 0): data 0s (3, 3), indices [[1, 0, 2], [0, 2, 1]],
  // updates [[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]].
  Tensor d = Tensor::zeros({3, 3}, DType::Float32);
  Tensor i = Tensor::from_ints({2, 3}, {1, 0, 2, 0, 2, 1});
  Tensor u = tensor_of({2, 3}, DType::Float32, {1.0, 1.1, 1.2, 2.0, 2.1, 2.2});
  expect_close(run1("scatter_elements", {d, i, u}), {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2}, 1e-7);
  // axis 1 with a negative index: data [[1, 2, 3, 4, 5]], indices [[1, -2]], updates [[1.1, 2.1]].
  Tensor row = tensor_of({1, 5}, DType::Float32, {1, 2, 3, 4, 5});
  Tensor y = run1(
      "scatter_elements",
      {row, Tensor::from_ints({1, 2}, {1, -2}, DType::Int32), tensor_of({1, 2}, DType::Float32, {1.1, 2.1})},
      {{"axis", int64_t{1}}});
  expect_close(y, {1, 1.1, 3, 2.1, 5}, 1e-7);
  // Duplicates with add: both land on column 1.
  Tensor a = run1("scatter_elements",
                  {row, Tensor::from_ints({1, 2}, {1, 1}), tensor_of({1, 2}, DType::Float32, {1, 2})},
                  {{"axis", int64_t{1}}, {"reduction", std::string("add")}});
  expect_equal(a, {1, 5, 3, 4, 5});
}

TEST(ScatterElements, AgainstNaive) {
  Tensor data = iota({3, 4}, DType::Int64);
  Tensor idx = Tensor::from_ints({2, 3}, {2, 0, 1, 1, 3, 0});
  Tensor upd = Tensor::from_ints({2, 3}, {-1, -2, -3, -4, -5, -6});
  for (int64_t axis = 0; axis < 2; ++axis) {
    if (axis == 0) {
      // Indices must be in range for axis 0 (size 3): clamp the one 3.
      idx.data<int64_t>()[4] = 2;
    } else {
      idx.data<int64_t>()[4] = 3;
    }
    std::vector<double> want = values(data);
    for (int64_t p = 0; p < 6; ++p) {
      int64_t r = p / 3, c = p % 3;
      int64_t v = idx.data<int64_t>()[p];
      (axis == 0 ? r : c) = v;
      want[static_cast<size_t>(r * 4 + c)] = upd.get_as_double(p);
    }
    expect_equal(run1("scatter_elements", {data, idx, upd}, {{"axis", axis}}), want,
                 "axis " + std::to_string(axis));
  }
}

TEST(ScatterElements, Errors) {
  Tensor d = iota({2, 3});
  expect_error(
      [&] {
        run1("scatter_elements", {d, Tensor::from_ints({2, 2}, {0, 0, 0, 0}), iota({2, 3})});
      },
      "scatter_elements: updates (2, 3) must have the shape of indices (2, 2)");
  expect_error(
      [&] {
        run1("scatter_elements", {d, Tensor::from_ints({3, 1}, {0, 0, 0}), iota({3, 1})},
             {{"axis", int64_t{1}}});
      },
      "scatter_elements: indices (3, 1) exceed data (2, 3) on axis 0");
  expect_error(
      [&] {
        run1("scatter_elements", {d, Tensor::from_ints({1, 1}, {2}), iota({1, 1})});
      },
      "scatter_elements: index 2 (at position 0 of indices) is out of range for axis 0 of size 2");
}

}  // namespace
}  // namespace kiln
