// An einsum equation resolved against its inputs' shapes (src/op/einsum.cc),
// for the kernel and for the pass that rewrites einsums as products
// (src/transform/decompose_einsum.cc).
#pragma once

#include <string>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// Labels are letters (A-Z: 0-25, a-z: 26-51) and the axes "..." stands for
// (52 on, right-aligned across inputs).
struct EinsumPlan {
  int num_labels = 0;                       // letters and "..." axes
  std::vector<int64_t> size;                // per label; -1 for a letter no input uses
  std::vector<std::vector<int>> in_labels;  // per input, per axis
  std::vector<int> out_labels;              // per output axis
};

// The plan of `equation` for inputs of `shapes`; kiln::Error naming what is
// wrong with a malformed equation or shapes that do not fit it.
EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes);

}  // namespace kiln
