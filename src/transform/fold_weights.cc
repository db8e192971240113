// Helpers of the weight-folding passes (fold_weights.h).
#include "transform/fold_weights.h"

#include <cmath>

namespace kiln {

std::optional<std::vector<float>> per_channel(const Tensor& t, int64_t rank, int64_t axis, int64_t channels) {
  int64_t offset = rank - t.ndim();
  if (offset < 0) return std::nullopt;
  for (int64_t a = 0; a < t.ndim(); ++a) {
    int64_t d = t.shape()[static_cast<size_t>(a)];
    if (d != 1 && !(a + offset == axis && d == channels)) return std::nullopt;
  }
  std::vector<float> v(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) v[static_cast<size_t>(k)] = t.data<float>()[t.numel() == 1 ? 0 : k];
  return v;
}

bool foldable(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float16; }

std::optional<Tensor> float32_values(const Tensor& t) {
  if (t.dtype() == DType::Float32) return t;
  if (t.dtype() != DType::Float16) return std::nullopt;
  Tensor out = Tensor::empty(t.shape(), DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = static_cast<float>(t.get_as_double(i));
  return out;
}

std::optional<Tensor> stored_as(const Tensor& t, DType dtype) {
  if (dtype == DType::Float32) return t;
  Tensor out = Tensor::empty(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    out.set_from_double(i, v);
    if (std::isfinite(v) && std::isinf(out.get_as_double(i))) return std::nullopt;
  }
  return out;
}

Tensor scale_along(const Tensor& w, int64_t axis, const std::vector<float>& scale) {
  int64_t n = w.shape()[static_cast<size_t>(axis)], inner = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < w.shape().size(); ++a) inner *= w.shape()[a];
  Tensor out = Tensor::empty(w.shape(), DType::Float32);
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) dst[i] = src[i] * scale[static_cast<size_t>(i / inner % n)];
  return out;
}

Function with_bindings(const Function& f, const std::vector<Expr>& replaced,
                       const std::vector<bool>& dropped) {
  std::vector<Binding> bindings;
  for (size_t i = 0; i < f->bindings.size(); ++i) {
    if (dropped[i]) continue;
    const Binding& b = f->bindings[i];
    bindings.push_back({b.var, replaced[i] ? replaced[i] : b.value});
  }
  return make_function(f->name, f->params, std::move(bindings), f->result, f->attrs);
}

}  // namespace kiln
