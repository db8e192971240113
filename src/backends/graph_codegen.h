// Lowering a graph function to the kiln.graph format (src/runtime/graph.h).
//
// Shared by JSON backends (their offloaded functions) and by the build step
// (the host program). Calls of functions that carry a Codegen attribute become
// "callee" nodes naming the function's global_symbol; calls of other module
// functions (composites) are inlined, their nodes sharing one group and
// tagged with the Composite pattern name. Tuples are flattened: a value of
// tuple type is the list of its tensors.
#pragma once

#include <map>
#include <string>

#include "ir/ir.h"
#include "runtime/graph.h"

namespace kiln {

struct GraphLowering {
  // Constants referenced by the graphs, by name; unnamed constants are named
  // "<graph>.const<N>".
  std::map<std::string, Tensor> constants;
};

Graph lower_to_graph(const Module& m, const FunctionNode& f, const std::string& graph_name,
                     GraphLowering& state);

}  // namespace kiln
