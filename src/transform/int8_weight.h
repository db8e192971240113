// A float32 weight that is, value for value, int8 values times a float32
// scale per output channel (as dequantizing a symmetric per-channel or
// per-tensor int8 weight gives it): what quantize-convs and
// quantize-matmuls run on the integers.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// An int8 weight and its per-output-channel scales.
struct Int8Weight {
  Tensor values;              // int8, the weight's shape
  std::vector<float> scales;  // one per output channel
  std::vector<int64_t> sums;  // the sum of each output channel's values
};

// `w` (float32, output channels on axis 0) as int8 values times a scale per
// channel, when its values are exactly that: the scale is found from the
// tensor's largest magnitude as 127 steps, or the channel's as 127 down to
// 1, and checked on every value.
std::optional<Int8Weight> int8_weight(const Tensor& w);

// `w` as int8: an int8 tensor itself, an int32 one when int8 holds each of
// its values (an int8 weight shifted by a zero point of 0, as ONNX's
// integer ops import); else nothing.
std::optional<Tensor> int8_values(const Tensor& w);

}  // namespace kiln
