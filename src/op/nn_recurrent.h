// The activations of a recurrent layer (src/op/nn_recurrent.cc), for its
// kernel and for the pass that unrolls it (src/transform/decompose_recurrent.cc).
#pragma once

#include <string>
#include <vector>

#include "kiln/runtime/attrs.h"

namespace kiln {

// The activation of every (direction, role) slot of nn.rnn, nn.gru or
// nn.lstm `op`, by the name its attributes give (as written; the ONNX
// defaults when they give none), one direction's list repeated for a
// bidirectional layer. kiln::Error for a list of the wrong length or an
// unknown direction.
std::vector<std::string> recurrent_activations(const std::string& op, const Attrs& attrs);

}  // namespace kiln
