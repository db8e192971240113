// nn.rnn, nn.gru and nn.lstm against straightforward loops written here from
// the ONNX equations (one batch entry and direction at a time, in double),
// and their error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "op_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

double sigm(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Row j of a (rows, cols) block dotted with v, block starting at row `first`.
double dot_row(const Tensor& m, int64_t dir, int64_t row, const std::vector<double>& v) {
  const int64_t rows = m.shape()[1], cols = m.shape()[2];
  double s = 0;
  for (int64_t k = 0; k < cols; ++k)
    s += m.get_as_double((dir * rows + row) * cols + k) * v[static_cast<size_t>(k)];
  return s;
}

std::vector<double> x_at(const Tensor& x, int64_t t, int64_t b) {
  const int64_t batch = x.shape()[1], input = x.shape()[2];
  std::vector<double> v;
  for (int64_t i = 0; i < input; ++i) v.push_back(x.get_as_double((t * batch + b) * input + i));
  return v;
}

TEST(Recurrent, RnnForwardMatchesLoop) {
  const int64_t S = 3, B = 2, I = 2, H = 3;
  Tensor x = random_tensor({S, B, I}, DType::Float32, 1);
  Tensor w = random_tensor({1, H, I}, DType::Float32, 2);
  Tensor r = random_tensor({1, H, H}, DType::Float32, 3);
  Tensor bias = random_tensor({1, 2 * H}, DType::Float32, 4);
  std::vector<Tensor> out = run_op(op_named("nn.rnn"), {x, w, r, bias}, {{"hidden_size", H}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{S, 1, B, H}));
  std::vector<double> y, y_h(static_cast<size_t>(B * H));
  std::vector<std::vector<double>> h(B, std::vector<double>(H, 0.0));
  std::vector<double> want_y(static_cast<size_t>(S * B * H));
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> next(H);
      for (int64_t j = 0; j < H; ++j)
        next[j] = std::tanh(dot_row(w, 0, j, x_at(x, t, b)) + dot_row(r, 0, j, h[b]) + bias.get_as_double(j) +
                            bias.get_as_double(H + j));
      h[b] = next;
      for (int64_t j = 0; j < H; ++j) want_y[static_cast<size_t>((t * B + b) * H + j)] = next[j];
    }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) y_h[static_cast<size_t>(b * H + j)] = h[b][j];
  expect_close(out[0], want_y, 1e-5);
  expect_close(out[1], y_h, 1e-5);
}

// One GRU direction over x in reverse order, both linear_before_reset values.
TEST(Recurrent, GruReverseMatchesLoop) {
  const int64_t S = 3, I = 2, H = 2;
  Tensor x = random_tensor({S, 1, I}, DType::Float32, 5);
  Tensor w = random_tensor({1, 3 * H, I}, DType::Float32, 6);
  Tensor r = random_tensor({1, 3 * H, H}, DType::Float32, 7);
  Tensor bias = random_tensor({1, 6 * H}, DType::Float32, 8);
  Tensor h0 = random_tensor({1, 1, H}, DType::Float32, 9);
  for (int64_t lbr = 0; lbr < 2; ++lbr) {
    std::vector<Tensor> out =
        run_op(op_named("nn.gru"), {x, w, r, bias, Tensor::from_ints({1}, {S}, DType::Int32), h0},
               {{"hidden_size", H}, {"direction", std::string("reverse")}, {"linear_before_reset", lbr}});
    std::vector<double> h{h0.get_as_double(0), h0.get_as_double(1)};
    std::vector<double> want_y(static_cast<size_t>(S * H));
    auto wb = [&](int64_t k) { return bias.get_as_double(k); };
    auto rb = [&](int64_t k) { return bias.get_as_double(3 * H + k); };
    for (int64_t t = S - 1; t >= 0; --t) {
      std::vector<double> xt = x_at(x, t, 0), z(H), rg(H), rh(H), next(H);
      for (int64_t j = 0; j < H; ++j) {
        z[j] = sigm(dot_row(w, 0, j, xt) + dot_row(r, 0, j, h) + wb(j) + rb(j));
        rg[j] = sigm(dot_row(w, 0, H + j, xt) + dot_row(r, 0, H + j, h) + wb(H + j) + rb(H + j));
        rh[j] = rg[j] * h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        double recur = lbr ? rg[j] * (dot_row(r, 0, 2 * H + j, h) + rb(2 * H + j))
                           : dot_row(r, 0, 2 * H + j, rh) + rb(2 * H + j);
        double cand = std::tanh(dot_row(w, 0, 2 * H + j, xt) + wb(2 * H + j) + recur);
        next[j] = (1 - z[j]) * cand + z[j] * h[j];
      }
      h = next;
      for (int64_t j = 0; j < H; ++j) want_y[static_cast<size_t>(t * H + j)] = h[j];
    }
    expect_close(out[0], want_y, 1e-5);
    expect_close(out[1], h, 1e-5);
  }
}

// Bidirectional LSTM with peepholes, initial states, clip and a shorter
// second sequence: its padded steps are zero and its states stop early.
TEST(Recurrent, LstmBidirectionalMatchesLoop) {
  const int64_t S = 3, B = 2, I = 2, H = 2, D = 2;
  Tensor x = random_tensor({S, B, I}, DType::Float32, 10);
  Tensor w = random_tensor({D, 4 * H, I}, DType::Float32, 11);
  Tensor r = random_tensor({D, 4 * H, H}, DType::Float32, 12);
  Tensor bias = random_tensor({D, 8 * H}, DType::Float32, 13);
  Tensor lens = Tensor::from_ints({B}, {3, 2}, DType::Int32);
  Tensor h0 = random_tensor({D, B, H}, DType::Float32, 14);
  Tensor c0 = random_tensor({D, B, H}, DType::Float32, 15);
  Tensor p = random_tensor({D, 3 * H}, DType::Float32, 16);
  const double clip = 0.7;
  std::vector<Tensor> out =
      run_op(op_named("nn.lstm"), {x, w, r, bias, lens, h0, c0, p},
             {{"hidden_size", H}, {"direction", std::string("bidirectional")}, {"clip", clip}});
  ASSERT_EQ(out.size(), 3u);
  auto cl = [&](double v) { return std::max(-clip, std::min(clip, v)); };
  std::vector<double> want_y(static_cast<size_t>(S * D * B * H), 0.0), want_h(D * B * H), want_c(D * B * H);
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(H), c(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0.get_as_double((d * B + b) * H + j);
        c[j] = c0.get_as_double((d * B + b) * H + j);
      }
      const int64_t len = lens.get_as_double(b);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t t = d == 0 ? k : len - 1 - k;
        std::vector<double> xt = x_at(x, t, b);
        auto pre = [&](int64_t gate, int64_t j) {
          int64_t row = gate * H + j;
          return dot_row(w, d, row, xt) + dot_row(r, d, row, h) + bias.get_as_double(d * 8 * H + row) +
                 bias.get_as_double(d * 8 * H + 4 * H + row);
        };
        auto peep = [&](int64_t which, int64_t j) { return p.get_as_double(d * 3 * H + which * H + j); };
        std::vector<double> nh(H), nc(H);
        for (int64_t j = 0; j < H; ++j) {
          double i = sigm(cl(pre(0, j) + peep(0, j) * c[j]));
          double f = sigm(cl(pre(2, j) + peep(2, j) * c[j]));
          double g = std::tanh(cl(pre(3, j)));
          nc[j] = f * c[j] + i * g;
          double o = sigm(cl(pre(1, j) + peep(1, j) * nc[j]));
          nh[j] = o * std::tanh(nc[j]);
        }
        h = nh;
        c = nc;
        for (int64_t j = 0; j < H; ++j) want_y[static_cast<size_t>(((t * D + d) * B + b) * H + j)] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        want_h[static_cast<size_t>((d * B + b) * H + j)] = h[j];
        want_c[static_cast<size_t>((d * B + b) * H + j)] = c[j];
      }
    }
  expect_close(out[0], want_y, 1e-5);
  expect_close(out[1], want_h, 1e-5);
  expect_close(out[2], want_c, 1e-5);
}

TEST(Recurrent, ActivationsWithAlphaBeta) {
  // A one-unit RNN with w = 1, r = 0: y = f(x), so each activation shows.
  Tensor x = Tensor::from_floats({4, 1, 1}, {-2.0f, -0.5f, 0.5f, 2.0f});
  Tensor w = Tensor::from_floats({1, 1, 1}, {1.0f});
  Tensor r = Tensor::from_floats({1, 1, 1}, {0.0f});
  auto run = [&](const std::string& act, std::vector<double> alpha, std::vector<double> beta) {
    return run_op(op_named("nn.rnn"), {x, w, r},
                  {{"hidden_size", int64_t{1}},
                   {"activations", act},
                   {"activation_alpha", alpha},
                   {"activation_beta", beta}})[0];
  };
  expect_close(run("Relu", {}, {}), {0, 0, 0.5, 2}, 1e-6);
  expect_close(run("LeakyRelu", {}, {}), {-0.02, -0.005, 0.5, 2}, 1e-6);
  expect_close(run("Affine", {2}, {1}), {-3, 0, 2, 5}, 1e-6);
  expect_close(run("ThresholdedRelu", {1}, {}), {0, 0, 0, 2}, 1e-6);
  expect_close(run("ScaledTanh", {2}, {0.5}),
               {2 * std::tanh(-1), 2 * std::tanh(-0.25), 2 * std::tanh(0.25), 2 * std::tanh(1)}, 1e-6);
  expect_close(run("HardSigmoid", {}, {}), {0.1, 0.4, 0.6, 0.9}, 1e-6);
  expect_close(run("Elu", {}, {}), {std::exp(-2) - 1, std::exp(-0.5) - 1, 0.5, 2}, 1e-6);
  expect_close(run("Softsign", {}, {}), {-2.0 / 3, -0.5 / 1.5, 0.5 / 1.5, 2.0 / 3}, 1e-6);
  expect_close(run("Softplus", {}, {}),
               {std::log1p(std::exp(-2)), std::log1p(std::exp(-0.5)), std::log1p(std::exp(0.5)),
                std::log1p(std::exp(2))},
               1e-6);
  expect_close(run("Sigmoid", {}, {}), {sigm(-2), sigm(-0.5), sigm(0.5), sigm(2)}, 1e-6);
}

TEST(Recurrent, Errors) {
  Tensor x = random_tensor({2, 1, 3}, DType::Float32, 1);
  Tensor w = random_tensor({1, 8, 3}, DType::Float32, 2);
  Tensor r = random_tensor({1, 8, 2}, DType::Float32, 3);
  const OpDef& lstm = op_named("nn.lstm");
  expect_error(
      [&] {
        run_op(lstm, {x, random_tensor({1, 8, 4}, DType::Float32, 4), r}, {{"hidden_size", int64_t{2}}});
      },
      "nn.lstm: input w must have shape (1, 8, 3) (num_directions, 4*hidden_size, input_size; "
      "hidden_size = 2), got (1, 8, 4)");
  expect_error(
      [&] {
        run_op(lstm, {x, w, r}, {{"hidden_size", int64_t{3}}});
      },
      "nn.lstm: input w must have shape (1, 12, 3)");
  expect_error(
      [&] {
        run_op(lstm, {x, w, r}, {{"hidden_size", int64_t{2}}, {"direction", std::string("bidirectional")}});
      },
      "nn.lstm: input w must have shape (2, 8, 3)");
  expect_error(
      [&] {
        run_op(lstm, {x, w, r},
               {{"hidden_size", int64_t{2}}, {"activations", std::string("Sigmoid,Tanh,Swish")}});
      },
      "nn.lstm: unknown activation 'Swish' in attribute 'activations' (known: Sigmoid, Tanh, Relu");
  expect_error(
      [&] {
        run_op(lstm, {x, w, r}, {{"hidden_size", int64_t{2}}, {"activations", std::string("Tanh,Tanh")}});
      },
      "nn.lstm: attribute 'activations' must list 3 functions");
  expect_error(
      [&] {
        run_op(lstm, {x, w, r}, {{"hidden_size", int64_t{2}}, {"direction", std::string("up")}});
      },
      "nn.lstm: attribute 'direction' must be forward, reverse or bidirectional, got 'up'");
  expect_error(
      [&] {
        run_op(lstm, {x, w, r},
               {{"hidden_size", int64_t{2}}, {"activation_alpha", std::vector<double>{1.0}}});
      },
      "nn.lstm: attribute 'activation_alpha' has 1 values but the activations take only 0");
  expect_error(
      [&] {
        run_op(op_named("nn.rnn"),
               {x, random_tensor({1, 2, 3}, DType::Float32, 5), random_tensor({1, 2, 2}, DType::Float32, 6),
                random_tensor({1, 4}, DType::Float32, 7), Tensor::from_ints({1}, {3}, DType::Int32)},
               {{"hidden_size", int64_t{2}}});
      },
      "nn.rnn: sequence_lens[0] = 3 is out of range (expected 0..2)");
  expect_error(
      [&] {
        run_op(op_named("nn.gru"), {x, w, r}, {{"hidden_size", int64_t{2}}});
      },
      "nn.gru: input w must have shape (1, 6, 3)");
}

}  // namespace
}  // namespace kiln
