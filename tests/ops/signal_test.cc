// signal.dft against transforms worked out by hand: complex input,
// truncation to a shorter length, the inverse's 1/L scale, and the errors.
#include <gtest/gtest.h>

#include "op/op.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

Attrs dft(int64_t axis, int64_t length = 0, int64_t inverse = 0, int64_t onesided = 0) {
  return {{"axis", axis}, {"length", length}, {"inverse", inverse}, {"onesided", onesided}};
}

TEST(SignalDft, ComplexInputAlongAnInnerAxis) {
  // [1, 2, 2]: along axis 0 of length 1 every value is its own transform;
  // along axis 1, two complex samples a = 1 + 2i, b = 3 - i: X = [a + b, a - b].
  Tensor x = tensor_of({1, 2, 2}, DType::Float32, {1, 2, 3, -1});
  expect_close(run1("signal.dft", {x}, dft(1)), {4, 1, -2, 3}, 1e-6);
  expect_close(run1("signal.dft", {x}, dft(0)), {1, 2, 3, -1}, 1e-6);
}

TEST(SignalDft, TruncatesToLengthAndScalesTheInverse) {
  // Length 2 of [1, 2, 3, 4] keeps [1, 2]: X = [3, -1].
  Tensor x = tensor_of({4, 1}, DType::Float64, {1, 2, 3, 4});
  Tensor y = run1("signal.dft", {x}, dft(0, 2));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_close(y, {3, 0, -1, 0}, 1e-12);
  // Inverse of the flat spectrum [1, 1, 1, 1] is the impulse [1, 0, 0, 0].
  Tensor flat = tensor_of({4, 1}, DType::Float32, {1, 1, 1, 1});
  expect_close(run1("signal.dft", {flat}, dft(0, 0, 1)), {1, 0, 0, 0, 0, 0, 0, 0}, 1e-6);
}

TEST(SignalDft, Errors) {
  Tensor x = tensor_of({4, 1}, DType::Float32, {1, 2, 3, 4});
  expect_error([&] { run1("signal.dft", {x}, dft(1)); }, "before the component axis");
  Tensor c = tensor_of({2, 2}, DType::Float32, {1, 2, 3, 4});
  expect_error([&] { run1("signal.dft", {c}, dft(0, 0, 0, 1)); }, "onesided needs a real input");
  Tensor three = tensor_of({2, 3}, DType::Float32, {1, 2, 3, 4, 5, 6});
  expect_error([&] { run1("signal.dft", {three}, dft(0)); }, "1 (real) or 2 (real, imaginary) components");
  Tensor ints = tensor_of({2, 1}, DType::Int32, {1, 2});
  expect_error([&] { run1("signal.dft", {ints}, dft(0)); }, "has dtype int32");
}

}  // namespace
}  // namespace kiln
