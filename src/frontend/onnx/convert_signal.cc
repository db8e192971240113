// ONNX signal-processing operators: the window functions HannWindow,
// HammingWindow and BlackmanWindow.
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

WindowTerms hann() { return {0.5, 0.5, 0.0}; }
WindowTerms hamming() { return {25.0 / 46.0, 21.0 / 46.0, 0.0}; }
WindowTerms blackman() { return {0.42, 0.5, 0.08}; }

}  // namespace

void add_signal_converters(ConverterTable& t) {
  t["HannWindow"] = {convert_window<hann>, {}, 17};
  t["HammingWindow"] = {convert_window<hamming>, {}, 17};
  t["BlackmanWindow"] = {convert_window<blackman>, {}, 17};
}

}  // namespace kiln::onnx_import
