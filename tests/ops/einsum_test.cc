// einsum against loops written here: matmul, batch matmul with "...",
// diagonal and trace, implicit output order, broadcasting, and the errors
// for malformed equations.
#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

Tensor einsum(const std::string& eq, const std::vector<Tensor>& xs) {
  return run1("einsum", xs, {{"equation", eq}});
}

TEST(Einsum, BatchMatmulWithEllipsis) {
  Tensor a = random_tensor({2, 3, 4}, DType::Float32, 1);
  Tensor b = random_tensor({2, 4, 5}, DType::Float32, 2);
  std::vector<double> want(2 * 3 * 5, 0.0);
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 4; ++k)
          want[(n * 3 + i) * 5 + j] +=
              a.get_as_double((n * 3 + i) * 4 + k) * b.get_as_double((n * 4 + k) * 5 + j);
  Tensor y = einsum("...ik,...kj->...ij", {a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
  expect_close(y, want, 1e-5);
  expect_close(einsum("...ik, ...kj", {a, b}), want, 1e-5);  // implicit: "..." then i, j
}

TEST(Einsum, DiagonalTraceTransposeSum) {
  Tensor m = tensor_of({3, 3}, DType::Float32, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_equal(einsum("ii->i", {m}), {1, 5, 9});
  expect_equal(einsum("ii", {m}), {15});  // implicit trace: no letter used once
  expect_equal(einsum("ij->ji", {m}), {1, 4, 7, 2, 5, 8, 3, 6, 9});
  expect_equal(einsum("ji", {m}), {1, 4, 7, 2, 5, 8, 3, 6, 9});  // implicit output "ij" of "ji" transposes
  expect_equal(einsum("ij->i", {m}), {6, 15, 24});
  Tensor v = tensor_of({3}, DType::Int32, {1, 2, 3});
  Tensor w = tensor_of({3}, DType::Int32, {4, 5, 6});
  expect_equal(einsum("i,i", {v, w}), {32});
  expect_equal(einsum("i,j->ij", {v, w}), {4, 5, 6, 8, 10, 12, 12, 15, 18});
  // "..." axes broadcast: (2, 1) with (1, 3).
  Tensor p = tensor_of({2, 1}, DType::Float32, {1, 2});
  Tensor q = tensor_of({1, 3}, DType::Float32, {10, 20, 30});
  expect_equal(einsum("...,...->...", {p, q}), {10, 20, 30, 20, 40, 60});
}

TEST(Einsum, Errors) {
  Tensor m = random_tensor({2, 3}, DType::Float32, 3);
  expect_error([&] { einsum("ij,jk->ik", {m}); },
               "einsum: equation 'ij,jk->ik' has 2 input term(s) but 1 input(s)");
  expect_error([&] { einsum("ijk->i", {m}); },
               "einsum: term 'ijk' of equation 'ijk->i' names 3 axes but input 0 has rank 2");
  expect_error([&] { einsum("ij->iz", {m}); },
               "einsum: malformed equation 'ij->iz': output letter 'z' is in no input term");
  expect_error([&] { einsum("ij->ii", {m}); }, "output letter 'i' repeats");
  expect_error([&] { einsum("i1->i", {m}); }, "einsum: malformed equation 'i1->i': unexpected character '1'");
  expect_error([&] { einsum("i..j", {m}); }, "a '.' that is not part of '...'");
  expect_error([&] { einsum("ij->i->j", {m}); }, "'->' twice");
  expect_error([&] { einsum("ii", {m}); },
               "einsum: equation 'ii': axis 1 of input 0 has size 3 but its label has size 2");
}

}  // namespace
}  // namespace kiln
