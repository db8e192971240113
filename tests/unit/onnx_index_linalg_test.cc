// ReverseSequence and Det imported from ONNX, against hand-worked values,
// interpreted and compiled; bad sequence lengths and non-matrix inputs are
// errors naming the problem.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_run_util.h"

namespace kiln {
namespace {

using namespace kiln::onnx_test;

Tensor f32(const Shape& s, const std::vector<float>& v) { return Tensor::from_floats(s, v); }

TEST(OnnxShape, ReverseSequenceReversesEachBatchEntrysPrefix) {
  // Time along axis 0 (4 steps), batch along axis 1: column b holds 10b + t.
  ModelBuilder b(10);
  b.input("x", {4, 2});
  b.initializer("lens", Tensor::from_ints({2}, {4, 2}));
  b.output("y", {4, 2});
  auto* n = b.node("ReverseSequence", {"x", "lens"}, {"y"});
  attr_int(n, "time_axis", 0);
  attr_int(n, "batch_axis", 1);
  std::vector<Tensor> y = run_both(b, {f32({4, 2}, {0, 10, 1, 11, 2, 12, 3, 13})});
  // Column 0 fully reversed; column 1 only its first two steps.
  EXPECT_EQ(values_of(y.at(0)), (std::vector<double>{3, 11, 2, 10, 1, 12, 0, 13}));
  ModelBuilder too_long(10);
  too_long.input("x", {4, 2});
  too_long.initializer("lens", Tensor::from_ints({2}, {5, 1}));
  too_long.output("y", {4, 2});
  too_long.node("ReverseSequence", {"x", "lens"}, {"y"});
  expect_contains(import_error(too_long), "sequence_lens[0] is 5; it must be in [0, 4]");
}

TEST(OnnxLinalg, DetOfABatch) {
  ModelBuilder b(11);
  b.input("x", {2, 2, 2});
  b.output("d", {2});
  b.node("Det", {"x"}, {"d"});
  // 1*4 - 2*3 and 3*1 - 0*5.
  std::vector<Tensor> y = run_both(b, {f32({2, 2, 2}, {1, 2, 3, 4, 3, 0, 5, 1})});
  expect_near_all(y.at(0), {-2, 3}, 1e-6, "det");
  ModelBuilder vec(11);
  vec.input("x", {3});
  vec.output("d", {});
  vec.node("Det", {"x"}, {"d"});
  expect_contains(import_error(vec), "Det needs [..., M, M]");
}

}  // namespace
}  // namespace kiln
