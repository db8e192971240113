// The int8 values of a float32 weight: src/transform/int8_weight.h.
#include "transform/int8_weight.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace {

// The int8 values of one output channel of `w` (its `n` values from
// `first`) at scale `s`, when float32(q * s) is each value exactly.
bool fits_scale(const float* first, int64_t n, float s, int8_t* q) {
  if (!(s > 0) || !std::isfinite(s)) return false;
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::nearbyint(first[i] / s);
    if (!(r >= -128 && r <= 127) || float(r) * s != first[i]) return false;
    q[i] = int8_t(r);
  }
  return true;
}

}  // namespace

std::optional<Tensor> int8_values(const Tensor& w) {
  if (w.dtype() == DType::Int8) return w;
  if (w.dtype() != DType::Int32) return std::nullopt;
  Tensor out = Tensor::empty(w.shape(), DType::Int8);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int32_t v = w.data<int32_t>()[i];
    if (v < -128 || v > 127) return std::nullopt;
    out.data<int8_t>()[i] = int8_t(v);
  }
  return out;
}

std::optional<Int8Weight> int8_weight(const Tensor& w) {
  const int64_t channels = w.shape()[0], n = w.numel() / channels;
  const float* data = w.data<float>();
  float tensor_max = 0;
  for (int64_t i = 0; i < w.numel(); ++i) tensor_max = std::max(tensor_max, std::fabs(data[i]));
  Int8Weight out{Tensor::empty(w.shape(), DType::Int8), {}, {}};
  int8_t* q = out.values.data<int8_t>();
  for (int64_t o = 0; o < channels; ++o) {
    const float* first = data + o * n;
    float channel_max = 0;
    for (int64_t i = 0; i < n; ++i) channel_max = std::max(channel_max, std::fabs(first[i]));
    bool found = channel_max == 0;
    float scale = 1;
    if (found) std::fill(q + o * n, q + (o + 1) * n, int8_t(0));
    // The scale that makes the tensor's largest magnitude 127 steps (a
    // per-tensor scale), then the channel's largest magnitude as 127, 126,
    // ... steps (a per-channel scale; its largest value need not be 127),
    // each with the float32 values next to that quotient.
    std::vector<float> quotients = {tensor_max / 127.0f};
    for (int steps = 127; steps >= 1; --steps) quotients.push_back(channel_max / float(steps));
    for (size_t c = 0; c < quotients.size() && !found; ++c) {
      float up = quotients[c], down = quotients[c];
      std::vector<float> candidates = {quotients[c]};
      for (int k = 0; k < 2; ++k) {
        up = std::nextafter(up, INFINITY);
        down = std::nextafter(down, 0.0f);
        candidates.push_back(up);
        candidates.push_back(down);
      }
      for (float candidate : candidates)
        if (!found && fits_scale(first, n, candidate, q + o * n)) {
          found = true;
          scale = candidate;
        }
    }
    if (!found) return std::nullopt;
    out.scales.push_back(scale);
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += q[o * n + i];
    out.sums.push_back(sum);
  }
  return out;
}

}  // namespace kiln
