// ONNX signal-processing operators: DFT, STFT, MelWeightMatrix and the
// window functions HannWindow, HammingWindow and BlackmanWindow.
//
// DFT is signal.dft. STFT of a signal [batch, length, 1|2] is frames taken
// at multiples of frame_step (a take with a constant [frames, frame_length]
// index), times the window, then signal.dft along the frame axis (onesided
// by default): [batch, frames, bins, 2].
//
// MelWeightMatrix depends only on its scalar inputs, which must be known at
// import; it becomes a constant [dft_length / 2 + 1, num_mel_bins] of
// triangular filters, as ONNX's reference builds them: num_mel_bins + 2
// points evenly spaced on the mel scale (mel = 2595 log10(1 + hz / 700))
// from lower_edge_hertz by (mel(upper) - mel(lower)) / (num_mel_bins + 2),
// each mapped back to hertz and to the bin floor((dft_length + 1) hz /
// sample_rate); filter i rises linearly from point i to point i + 1 and
// falls to point i + 2.
//
// A window depends only on its size, which must be known at import (kiln
// compiles static shapes), so it is computed here and becomes a constant.
// For n in [0, size), with D = size when `periodic` (the default) and
// size - 1 otherwise, and c_k = cos(2 pi k n / D):
//
//   Hann:     0.5 - 0.5 c_1
//   Hamming:  25/46 - 21/46 c_1
//   Blackman: 0.42 - 0.5 c_1 + 0.08 c_2
//
// computed in double and stored in `output_datatype` (default float32). A
// symmetric window of one sample is {1}.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {
namespace {

struct WindowTerms {
  double a0, a1, a2;  // a0 - a1 c_1 + a2 c_2
};

template <WindowTerms (*Terms)()>
void convert_window(NodeContext& n) {
  std::vector<int64_t> size = n.require_ints(0, "the window size");
  if (size.size() != 1 || n.rank(0) > 1) n.fail("input 0 (the window size) must be a scalar");
  const int64_t count = size[0];
  if (count < 0 || count > (int64_t{1} << 28))
    n.fail("the window size " + std::to_string(count) + " is out of range (0 to 2^28)");
  const int64_t elem = n.attr_int("output_datatype", 1);
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int32_t>(elem));
  if (!dtype || !is_float(*dtype))
    n.fail("output_datatype " + std::to_string(elem) + " (" + onnx_type_name(static_cast<int32_t>(elem)) +
           ") is not a floating-point type kiln supports");
  const bool periodic = n.attr_int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? count : count - 1);
  const WindowTerms w = Terms();
  Tensor t = Tensor::zeros({count}, *dtype);
  for (int64_t i = 0; i < count; ++i) {
    // A symmetric window of one sample is {1}, as numpy's windows are.
    if (denom <= 0) {
      t.set_from_double(i, 1.0);
      continue;
    }
    double phase = 2.0 * M_PI * static_cast<double>(i) / denom;
    t.set_from_double(i, w.a0 - w.a1 * std::cos(phase) + w.a2 * std::cos(2 * phase));
  }
  n.set_output(0, n.constant_expr(std::move(t)));
}

// DFT (opset 17): axis an attribute (default 1), dft_length input 1.
void convert_dft(NodeContext& n) {
  const int64_t r = n.rank(0);
  int64_t axis = n.attr_int("axis", 1);
  if (axis < -r || axis >= r - 1)
    n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) +
           " (the last axis holds the components)");
  if (axis < 0) axis += r;
  int64_t length = 0;
  if (n.has_input(1)) {
    std::vector<int64_t> l = n.require_ints(1, "dft_length");
    if (l.size() != 1 || l[0] < 1) n.fail("dft_length must be one length >= 1");
    length = l[0];
  }
  n.set_output(0, n.call("signal.dft", {n.input(0)},
                         {{"axis", axis},
                          {"inverse", n.attr_int("inverse", 0) != 0 ? int64_t{1} : int64_t{0}},
                          {"onesided", n.attr_int("onesided", 0) != 0 ? int64_t{1} : int64_t{0}},
                          {"length", length}}));
}

int64_t scalar_int(NodeContext& n, size_t i, const std::string& what) {
  std::vector<int64_t> v = n.require_ints(i, what);
  if (v.size() != 1 || n.rank(i) > 1) n.fail(what + " must be a scalar");
  return v[0];
}

void convert_stft(NodeContext& n) {
  const Shape& shape = n.desc(0).shape;
  if (shape.size() != 3 || (shape[2] != 1 && shape[2] != 2))
    n.fail("the signal " + shape_str(shape) +
           " must be [batch, length, 1] (real) or [batch, length, 2] (complex)");
  const int64_t step = scalar_int(n, 1, "frame_step");
  if (step < 1) n.fail("frame_step " + std::to_string(step) + " must be >= 1");
  int64_t frame = 0;
  if (n.has_input(3)) frame = scalar_int(n, 3, "frame_length");
  if (n.has_input(2)) {
    if (n.rank(2) != 1) n.fail("the window must be 1-D, got " + shape_str(n.desc(2).shape));
    const int64_t w = n.desc(2).shape[0];
    if (frame != 0 && frame != w)
      n.fail("frame_length " + std::to_string(frame) + " differs from the window's length " +
             std::to_string(w));
    frame = w;
  }
  if (frame < 1) n.fail("STFT needs frame_length or a window (the frame length), and it must be >= 1");
  if (frame > shape[1])
    n.fail("frame_length " + std::to_string(frame) + " is longer than the signal (" +
           std::to_string(shape[1]) + ")");
  const int64_t frames = (shape[1] - frame) / step + 1;
  std::vector<int64_t> index;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < frame; ++t) index.push_back(f * step + t);
  Expr x = n.call("take", {n.input(0), n.constant_expr(Tensor::from_ints({frames, frame}, index))},
                  {{"axis", int64_t{1}}});
  if (n.has_input(2)) {
    Expr w = n.input(2);
    if (n.desc(2).dtype != n.desc(0).dtype)
      w = n.call("astype", {w}, {{"dtype", std::string(dtype_name(n.desc(0).dtype))}});
    w = n.call("reshape", {w}, {{"newshape", std::vector<int64_t>{1, 1, frame, 1}}});
    x = n.call("multiply", {x, w});
  }
  const bool onesided = n.attr_int("onesided", 1) != 0;
  if (onesided && shape[2] != 1) n.fail("onesided needs a real signal ([batch, length, 1])");
  n.set_output(
      0, n.call("signal.dft", {x},
                {{"axis", int64_t{2}}, {"onesided", onesided ? int64_t{1} : int64_t{0}}, {"length", frame}}));
}

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

double scalar_value(NodeContext& n, size_t i, const std::string& what) {
  Tensor t = n.require_constant(i, what);
  if (t.numel() != 1) n.fail(what + " must be a scalar, got shape " + shape_str(t.shape()));
  return t.get_as_double(0);
}

void convert_mel_weight_matrix(NodeContext& n) {
  const int64_t mels = static_cast<int64_t>(scalar_value(n, 0, "num_mel_bins"));
  const int64_t dft_length = static_cast<int64_t>(scalar_value(n, 1, "dft_length"));
  const double rate = scalar_value(n, 2, "sample_rate");
  const double lower = scalar_value(n, 3, "lower_edge_hertz");
  const double upper = scalar_value(n, 4, "upper_edge_hertz");
  if (mels < 1 || mels > (1 << 20))
    n.fail("num_mel_bins " + std::to_string(mels) + " is out of range (1 to 2^20)");
  if (dft_length < 1 || dft_length > (1 << 24))
    n.fail("dft_length " + std::to_string(dft_length) + " is out of range (1 to 2^24)");
  if (!(rate > 0)) n.fail("sample_rate must be > 0");
  if (!(lower >= 0 && lower < upper))
    n.fail("the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz");
  const int64_t elem = n.attr_int("output_datatype", 1);
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int32_t>(elem));
  if (!dtype) n.fail("output_datatype " + std::to_string(elem) + " is not a type kiln supports");
  const int64_t spectrum = dft_length / 2 + 1;
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = mel(lower);
  const double step = (mel(upper) - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> bin(static_cast<size_t>(mels + 2));
  for (int64_t p = 0; p < mels + 2; ++p) {
    double hz = 700.0 * (std::pow(10.0, (static_cast<double>(p) * step + low_mel) / 2595.0) - 1.0);
    bin[static_cast<size_t>(p)] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / rate));
    if (bin[static_cast<size_t>(p)] >= spectrum)
      n.fail("upper_edge_hertz " + format_number(upper) + " maps past the last of the " +
             std::to_string(spectrum) + " frequency bins; it must be at most about sample_rate / 2");
  }
  std::vector<double> w(static_cast<size_t>(spectrum * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return w[static_cast<size_t>(j * mels + i)]; };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t lo = bin[static_cast<size_t>(i)], mid = bin[static_cast<size_t>(i + 1)],
                  hi = bin[static_cast<size_t>(i + 2)];
    if (mid == lo)
      at(mid, i) = 1;
    else
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (int64_t j = mid; j < hi; ++j) at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  Tensor t = Tensor::zeros({spectrum, mels}, *dtype);
  for (int64_t k = 0; k < t.numel(); ++k) t.set_from_double(k, w[static_cast<size_t>(k)]);
  n.set_output(0, n.constant_expr(std::move(t)));
}

WindowTerms hann() { return {0.5, 0.5, 0.0}; }
WindowTerms hamming() { return {25.0 / 46.0, 21.0 / 46.0, 0.0}; }
WindowTerms blackman() { return {0.42, 0.5, 0.08}; }

}  // namespace

void add_signal_converters(ConverterTable& t) {
  t["HannWindow"] = {convert_window<hann>, {}, 17};
  t["HammingWindow"] = {convert_window<hamming>, {}, 17};
  t["BlackmanWindow"] = {convert_window<blackman>, {}, 17};
  t["DFT"] = {convert_dft, {"signal.dft"}, 17};
  t["STFT"] = {convert_stft, {"signal.dft", "take", "multiply", "reshape", "astype"}, 17};
  t["MelWeightMatrix"] = {convert_mel_weight_matrix, {}, 17};
}

}  // namespace kiln::onnx_import
