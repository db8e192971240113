// nn.nll_loss against hand-worked values and a plain loop written here, for
// every reduction, class weights, ignore_index (in and out of range) and
// spatial dims; plus its error paths.
#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

Tensor nll(const std::vector<Tensor>& in, const std::string& reduction, std::optional<int64_t> ignore = {}) {
  Attrs a{{"reduction", reduction}};
  if (ignore) a.set("ignore_index", *ignore);
  return run_op(op_named("nn.nll_loss"), in, a)[0];
}

TEST(NllLoss, HandValues2D) {
  // Rows of log-probabilities, targets 2 and 0.
  Tensor x = Tensor::from_floats({2, 3}, {-1, -2, -3, -4, -5, -6});
  Tensor t = Tensor::from_ints({2}, {2, 0});
  expect_close(nll({x, t}, "none"), {3, 4}, 1e-6);
  expect_close(nll({x, t}, "sum"), {7}, 1e-6);
  expect_close(nll({x, t}, "mean"), {3.5}, 1e-6);
  // Weights (0.5, 1, 2): losses 3*2 and 4*0.5; mean divides by 2 + 0.5.
  Tensor w = Tensor::from_floats({3}, {0.5f, 1, 2});
  expect_close(nll({x, t, w}, "none"), {6, 2}, 1e-6);
  expect_close(nll({x, t, w}, "sum"), {8}, 1e-6);
  expect_close(nll({x, t, w}, "mean"), {8 / 2.5}, 1e-6);
  // Ignoring class 0 drops the second row from the loss and the weight sum.
  expect_close(nll({x, t, w}, "none", 0), {6, 0}, 1e-6);
  expect_close(nll({x, t, w}, "mean", 0), {3}, 1e-6);
  // An out-of-range ignore_index that appears in target is skipped, not an error.
  Tensor t_out = Tensor::from_ints({2}, {7, 1});
  expect_close(nll({x, t_out}, "mean", 7), {5}, 1e-6);
  Tensor t_neg = Tensor::from_ints({2}, {-1, 1}, DType::Int32);
  expect_close(nll({x, t_neg}, "sum", -1), {5}, 1e-6);
}

TEST(NllLoss, SpatialDimsMatchLoop) {
  const int64_t n = 2, c = 3, d1 = 2, d2 = 2;
  std::vector<float> xs;
  for (int i = 0; i < n * c * d1 * d2; ++i) xs.push_back(-0.1f * static_cast<float>(i % 7) - 0.05f);
  std::vector<int64_t> ts = {0, 1, 2, 1, 2, 2, 0, 1};
  std::vector<float> ws = {1.5f, 0.25f, 3.0f};
  Tensor x = Tensor::from_floats({n, c, d1, d2}, xs);
  Tensor t = Tensor::from_ints({n, d1, d2}, ts);
  Tensor w = Tensor::from_floats({c}, ws);
  const int64_t ignore = 1;
  std::vector<double> each;
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d1 * d2; ++j) {
      int64_t cls = ts[static_cast<size_t>(i * d1 * d2 + j)];
      double l = 0;
      if (cls != ignore) {
        double wt = ws[static_cast<size_t>(cls)];
        l = -xs[static_cast<size_t>((i * c + cls) * d1 * d2 + j)] * wt;
        wsum += wt;
      }
      each.push_back(l);
      sum += l;
    }
  Tensor none = nll({x, t, w}, "none", ignore);
  EXPECT_EQ(none.shape(), (Shape{n, d1, d2}));
  expect_close(none, each, 1e-6);
  expect_close(nll({x, t, w}, "sum", ignore), {sum}, 1e-6);
  Tensor mean = nll({x, t, w}, "mean", ignore);
  EXPECT_EQ(mean.shape(), Shape{});
  expect_close(mean, {sum / wsum}, 1e-6);
}

TEST(NllLoss, Errors) {
  Tensor x = Tensor::from_floats({2, 3}, {-1, -2, -3, -4, -5, -6});
  Tensor t = Tensor::from_ints({2}, {2, 0});
  expect_error([&] { nll({x, t}, "avg"); }, "attribute 'reduction' must be 'none', 'sum' or 'mean'");
  expect_error([&] { nll({x, Tensor::from_ints({3}, {0, 1, 2})}, "mean"); }, "input target must have shape");
  expect_error([&] { nll({x, Tensor::from_floats({2}, {0, 1})}, "mean"); }, "input target has dtype float32");
  expect_error(
      [&] {
        nll({x, t, Tensor::from_floats({2}, {1, 1})}, "mean");
      },
      "input weight must have shape (C,) = (3,)");
  expect_error(
      [&] {
        nll({Tensor::from_floats({3}, {1, 2, 3}), Tensor::from_ints({}, {0})}, "mean");
      },
      "input log_prob must have shape (N, C, d1..dk)");
  expect_error(
      [&] {
        nll({x, Tensor::from_ints({2}, {3, 0})}, "mean");
      },
      "nn.nll_loss: target value 3 at flat index 0 is out of range [0, 3)");
}

}  // namespace
}  // namespace kiln
