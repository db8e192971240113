// det (ONNX Det) against determinants worked out by hand: cofactor expansion
// for small matrices, triangular and permutation matrices whose determinant
// is known in closed form.
#include <gtest/gtest.h>

#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

TEST(Det, TwoByTwoAndThreeByThree) {
  // ad - bc = 1*4 - 2*3.
  expect_close(run1("det", {tensor_of({2, 2}, DType::Float32, {1, 2, 3, 4})}), {-2}, 1e-6);
  // Cofactor expansion of [[2, 1, 3], [1, 0, 1], [0, 1, 4]] along row 0:
  // 2(0*4 - 1*1) - 1(1*4 - 1*0) + 3(1*1 - 0*0) = -2 - 4 + 3 = -3.
  expect_close(run1("det", {tensor_of({3, 3}, DType::Float64, {2, 1, 3, 1, 0, 1, 0, 1, 4})}), {-3}, 1e-12);
}

TEST(Det, PivotingHandlesAZeroLeadingEntry) {
  // A row swap of the identity: determinant -1, and the first pivot is 0.
  expect_close(run1("det", {tensor_of({3, 3}, DType::Float32, {0, 1, 0, 1, 0, 0, 0, 0, 1})}), {-1}, 1e-6);
  // Upper triangular: the product of the diagonal, 2 * 3 * 0.5.
  expect_close(run1("det", {tensor_of({3, 3}, DType::Float32, {2, 7, -1, 0, 3, 5, 0, 0, 0.5})}), {3}, 1e-5);
}

TEST(Det, SingularMatrixIsZero) {
  // The second row is twice the first.
  expect_close(run1("det", {tensor_of({2, 2}, DType::Float32, {1, 2, 2, 4})}), {0}, 0);
  expect_close(run1("det", {tensor_of({3, 3}, DType::Float32, {0, 0, 1, 0, 0, 2, 3, 4, 5})}), {0}, 0);
}

TEST(Det, BatchedOverLeadingAxes) {
  // [2, 1, 2, 2]: diag(2, 3) -> 6 and [[0, 1], [1, 0]] -> -1.
  Tensor y = run1("det", {tensor_of({2, 1, 2, 2}, DType::Float32, {2, 0, 0, 3, 0, 1, 1, 0})});
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  expect_close(y, {6, -1}, 1e-6);
  Tensor h = run1("det", {tensor_of({2, 2}, DType::Float16, {1, 2, 3, 4})});
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_TRUE(h.shape().empty());
  expect_close(h, {-2}, 1e-3);
}

TEST(Det, RejectsNonSquareAndIntegerInputs) {
  expect_error(
      [] {
        run1("det", {tensor_of({2, 3}, DType::Float32, {1, 2, 3, 4, 5, 6})});
      },
      "square last two axes");
  expect_error([] { run1("det", {tensor_of({4}, DType::Float32, {1, 2, 3, 4})}); }, "rank 2 or more");
  expect_error([] { run1("det", {tensor_of({2, 2}, DType::Int32, {1, 2, 3, 4})}); }, "has dtype int32");
}

}  // namespace
}  // namespace kiln
