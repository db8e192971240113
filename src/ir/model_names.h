// The model's own input and output names (runtime/model_names.h) kept in a
// Module, as module attributes, so they survive the passes, `kiln import`
// and `kiln partition` (.kir text) and reach the compiled .kmod:
//
//   module attrs {"onnx.input.onnx__Flatten_0" = "onnx::Flatten_0", "onnx.output.0" = "19"}
//
// "onnx.input.<parameter of @main>" gives the model name of a parameter;
// "onnx.output.<i>" that of output i of @main (tuples flattened).
#pragma once

#include "ir/ir.h"
#include "runtime/model_names.h"

namespace kiln {

// The names recorded in `m` (empty when none). Throws kiln::Error naming the
// attribute when one is not a string, names no parameter of @main or leaves
// a gap in the output indices.
ModelNames model_names(const Module& m);
// Replaces the names recorded in `m`.
void set_model_names(Module& m, const ModelNames& names);

}  // namespace kiln
