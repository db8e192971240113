// What the passes that fold per-channel constants into a layer's weights
// share (fold-batch-norm, fold-scale-shift): reading a per-channel constant,
// scaling a weight along its output-channel axis, and rebuilding a function
// with some bindings replaced or dropped.
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"

namespace kiln {

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
