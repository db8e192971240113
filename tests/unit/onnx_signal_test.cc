// ONNX's signal operators against values computed here from their
// definitions: the window functions, DFT (forward, inverse, onesided,
// padded), STFT (frames times a window) and MelWeightMatrix. Each model runs
// interpreted and compiled, with the same values; bad parameters are errors
// that say what is wrong.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_run_util.h"

namespace kiln {
namespace {

using namespace kiln::onnx_test;

constexpr int32_t kF64 = onnx::TensorProto_DataType_DOUBLE;
constexpr int32_t kI64 = onnx::TensorProto_DataType_INT64;

Tensor f32(const Shape& s, const std::vector<float>& v) { return Tensor::from_floats(s, v); }

TEST(OnnxSignal, WindowFunctions) {
  const double pi = std::acos(-1.0);
  struct Case {
    std::string op;
    int64_t size;
    bool periodic;
    std::vector<double> want;
  };
  std::vector<Case> cases = {
      // Periodic Hann of 4: 0.5 - 0.5 cos(2 pi n / 4).
      {"HannWindow", 4, true, {0, 0.5, 1, 0.5}},
      // Periodic Blackman of 4: 0.42 - 0.5 cos(2 pi n / 4) + 0.08 cos(4 pi n / 4).
      {"BlackmanWindow", 4, true, {0, 0.34, 1, 0.34}},
      {"HammingWindow", 5, false, {}},
  };
  // Symmetric Hamming of 5: 25/46 - 21/46 cos(2 pi n / 4).
  for (int k = 0; k < 5; ++k) cases[2].want.push_back(25.0 / 46 - 21.0 / 46 * std::cos(2 * pi * k / 4));
  for (const Case& c : cases) {
    ModelBuilder b(17);
    b.initializer("size", Tensor::from_ints({}, {c.size}));
    b.output("w", {c.size}, kF64);
    auto* n = b.node(c.op, {"size"}, {"w"});
    attr_int(n, "output_datatype", kF64);
    attr_int(n, "periodic", c.periodic ? 1 : 0);
    std::vector<Tensor> y = run_both(b, {});
    EXPECT_EQ(y.at(0).dtype(), DType::Float64) << c.op;
    expect_near_all(y.at(0), c.want, 1e-12, c.op);
  }
  ModelBuilder bad(17);
  bad.input("size", {}, kI64);
  bad.output("w", {4});
  bad.node("HannWindow", {"size"}, {"w"});
  expect_contains(import_error(bad), "window size");
}

// A naive DFT of a real signal, for the checks below.
std::vector<double> naive_dft(const std::vector<double>& x, int64_t bins, bool inverse = false) {
  const double pi = std::acos(-1.0);
  const double n = static_cast<double>(x.size());
  std::vector<double> out;
  for (int64_t k = 0; k < bins; ++k) {
    double re = 0, im = 0;
    for (size_t t = 0; t < x.size(); ++t) {
      double phase = (inverse ? 2 : -2) * pi * static_cast<double>(k) * static_cast<double>(t) / n;
      re += x[t] * std::cos(phase);
      im += x[t] * std::sin(phase);
    }
    out.push_back(inverse ? re / n : re);
    out.push_back(inverse ? im / n : im);
  }
  return out;
}

TEST(OnnxSignal, DftOfRealSignals) {
  // An impulse at 0 has the flat spectrum 1; at 1 the roots e^(-2 pi i k / 4) = 1, -i, -1, i.
  ModelBuilder b(17);
  b.input("x", {2, 4, 1});
  b.output("y", {2, 4, 2});
  b.node("DFT", {"x"}, {"y"});
  std::vector<Tensor> y = run_both(b, {f32({2, 4, 1}, {1, 0, 0, 0, 0, 1, 0, 0})});
  expect_near_all(y.at(0), {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, -1, -1, 0, 0, 1}, 1e-6, "DFT");
  // onesided with dft_length 6 (zero-padded): bins 0..3 of the padded signal.
  ModelBuilder one(17);
  one.input("x", {1, 4, 1});
  one.initializer("len", Tensor::from_ints({}, {6}));
  one.output("y", {1, 4, 2});
  auto* n = one.node("DFT", {"x", "len"}, {"y"});
  attr_int(n, "onesided", 1);
  std::vector<Tensor> z = run_both(one, {f32({1, 4, 1}, {1, 2, 3, 4})});
  expect_near_all(z.at(0), naive_dft({1, 2, 3, 4, 0, 0}, 4), 1e-5, "onesided DFT of length 6");
}

TEST(OnnxSignal, InverseDftUndoesTheForwardOne) {
  // Forward along axis 1 of [1, 5, 1], then inverse: the signal again, with zero imaginary parts.
  ModelBuilder b(17);
  b.input("x", {1, 5, 1});
  b.output("y", {1, 5, 2});
  b.node("DFT", {"x"}, {"f"});
  attr_int(b.node("DFT", {"f"}, {"y"}), "inverse", 1);
  std::vector<Tensor> y = run_both(b, {f32({1, 5, 1}, {3, -1, 4, 1, -5})});
  expect_near_all(y.at(0), {3, 0, -1, 0, 4, 0, 1, 0, -5, 0}, 1e-5, "inverse(forward(x))");
}

TEST(OnnxSignal, StftFramesTimesWindow) {
  // Signal 0..9, frames of 4 every 3 samples: starts 0, 3 and 6 (the last ends at 9).
  ModelBuilder b(17);
  b.input("s", {1, 10, 1});
  b.initializer("step", Tensor::from_ints({}, {3}));
  b.input("w", {4});
  b.output("y", {1, 3, 3, 2});
  b.node("STFT", {"s", "step", "w"}, {"y"});
  std::vector<float> sig;
  for (int i = 0; i < 10; ++i) sig.push_back(static_cast<float>(i));
  const std::vector<double> w = {0.5, 1, 1, 0.5};
  std::vector<Tensor> y = run_both(b, {f32({1, 10, 1}, sig), f32({4}, {0.5, 1, 1, 0.5})});
  std::vector<double> want;
  for (int start : {0, 3, 6}) {
    std::vector<double> frame;
    for (int t = 0; t < 4; ++t) frame.push_back((start + t) * w[static_cast<size_t>(t)]);
    for (double v : naive_dft(frame, 3)) want.push_back(v);
  }
  EXPECT_EQ(y.at(0).shape(), (Shape{1, 3, 3, 2}));
  expect_near_all(y.at(0), want, 1e-5, "STFT");
  ModelBuilder long_frame(17);
  long_frame.input("s", {1, 4, 1});
  long_frame.initializer("step", Tensor::from_ints({}, {1}));
  long_frame.initializer("len", Tensor::from_ints({}, {8}));
  long_frame.output("y", {1, 1, 5, 2});
  long_frame.node("STFT", {"s", "step", "", "len"}, {"y"});
  expect_contains(import_error(long_frame), "frame_length 8 is longer than the signal (4)");
}

TEST(OnnxSignal, MelWeightMatrixTriangles) {
  // 2 mel bins over a 16-point DFT (9 bins) at 16 kHz from 0 to 8 kHz: the 4
  // mel points are 700 (10^(p * mel(8000) / 4 / 2595) - 1) Hz, mapped to
  // floor(17 hz / 16000); filter i rises from point i to i + 1, falls to i + 2.
  ModelBuilder b(17);
  b.initializer("bins", Tensor::from_ints({}, {2}));
  b.initializer("dft", Tensor::from_ints({}, {16}));
  b.initializer("rate", Tensor::from_ints({}, {16000}));
  b.initializer("lo", Tensor::from_floats({}, {0}));
  b.initializer("hi", Tensor::from_floats({}, {8000}));
  b.output("m", {9, 2});
  b.node("MelWeightMatrix", {"bins", "dft", "rate", "lo", "hi"}, {"m"});
  std::vector<Tensor> y = run_both(b, {});
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  std::vector<int64_t> point;
  for (int p = 0; p < 4; ++p)
    point.push_back(
        static_cast<int64_t>(std::floor(17 * 700 * (std::pow(10, p * mel(8000) / 4 / 2595) - 1) / 16000)));
  std::vector<double> want(18, 0.0);
  for (int i = 0; i < 2; ++i) {
    int64_t lo = point[static_cast<size_t>(i)], mid = point[static_cast<size_t>(i + 1)],
            hi = point[static_cast<size_t>(i + 2)];
    for (int64_t j = lo; j <= mid; ++j)
      want[static_cast<size_t>(j * 2 + i)] = mid == lo ? 1.0 : double(j - lo) / double(mid - lo);
    for (int64_t j = mid; j < hi; ++j)
      want[static_cast<size_t>(j * 2 + i)] = double(hi - j) / double(hi - mid);
  }
  expect_near_all(y.at(0), want, 1e-6, "MelWeightMatrix");
  // The points are 0, 614, 1768 and 3934 Hz (the step divides by
  // num_mel_bins + 2, so the upper edge itself is never reached): bins 0, 0,
  // 1 and 4. Filter 0 is a spike at bin 0; filter 1 rises over 0..1, falls over 1..4.
  EXPECT_EQ(point, (std::vector<int64_t>{0, 0, 1, 4}));
  expect_near_all(y.at(0), {1, 0, 0, 1, 0, 2.0 / 3, 0, 1.0 / 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1e-6,
                  "MelWeightMatrix by hand");
  ModelBuilder past(17);
  past.initializer("bins", Tensor::from_ints({}, {2}));
  past.initializer("dft", Tensor::from_ints({}, {16}));
  past.initializer("rate", Tensor::from_ints({}, {16000}));
  past.initializer("lo", Tensor::from_floats({}, {0}));
  past.initializer("hi", Tensor::from_floats({}, {40000}));
  past.output("m", {9, 2});
  past.node("MelWeightMatrix", {"bins", "dft", "rate", "lo", "hi"}, {"m"});
  expect_contains(import_error(past), "upper_edge_hertz 40000 maps past the last of the 9 frequency bins");
}

}  // namespace
}  // namespace kiln
