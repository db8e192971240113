// What the passes that fold per-channel constants into a layer's weights
// share (fold-batch-norm, fold-scale-shift): reading a per-channel constant,
// scaling a weight along its output-channel axis, and rebuilding a function
// with some bindings replaced or dropped.
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"

namespace kiln {

// Whether the passes fold into an op computing in `dtype`: float32, or
// float16 (the new constants computed in float32 from the float16 ones,
// then rounded to float16).
bool foldable(DType dtype);

// A float32 or float16 constant's values as a float32 tensor; nullopt for
// other types.
std::optional<Tensor> float32_values(const Tensor& t);

// The float32 tensor `t` stored as `dtype` (float32 or float16, rounded to
// nearest even); nullopt when a finite value would round to an infinity, so
// a fold never makes a layer overflow that did not.
std::optional<Tensor> stored_as(const Tensor& t, DType dtype);

// The values of a per-channel constant: its dims, right-aligned to a result
// of rank `rank`, are all 1 except `channels` on `axis`; nullopt otherwise.
std::optional<std::vector<float>> per_channel(const Tensor& t, int64_t rank, int64_t axis, int64_t channels);

// w scaled by scale[k] along `axis`.
Tensor scale_along(const Tensor& w, int64_t axis, const std::vector<float>& scale);

// f with binding i's value replaced by replaced[i] (when set) and the
// bindings marked in `dropped` removed.
Function with_bindings(const Function& f, const std::vector<Expr>& replaced,
                       const std::vector<bool>& dropped);

}  // namespace kiln
