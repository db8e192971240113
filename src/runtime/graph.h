// The kiln.graph format: a versioned JSON dataflow graph.
//
// It is what JSON backends receive from codegen (one graph per offloaded
// function) and what the VM runs as the host program of a .kmod. Nodes carry
// the op name, input value names, output types and EVERY attribute, so a
// backend can execute a graph without the compiler:
//
//   {"format": "kiln.graph", "version": 1, "name": "my_npu_main_0",
//    "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
//    "constants": [{"name": "w", "shape": [4, 8], "dtype": "float32"}],
//    "nodes": [{"name": "y", "op": "matmul", "inputs": ["x", "w"],
//               "outputs": [{"name": "y", "shape": [2, 8], "dtype": "float32"}],
//               "attrs": {"out_dtype": ""}, "group": 0,
//               "pattern": "my_npu.matmul_relu_fused"}, ...],
//    "outputs": ["z"]}
//
// Constants are referenced by name; their data is stored outside the JSON
// (in the .kmod's constant section). A node with "callee" instead of "op"
// calls an offloaded function by its global symbol (host programs only); a
// node with "kernel" calls a compiled host kernel (runtime/host_code.h).
// Nodes sharing a "group" came from one pattern match (fusion candidates).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/runtime/attrs.h"
#include "op/op.h"

namespace kiln {

inline constexpr int kGraphFormatVersion = 1;

struct GraphValue {
  std::string name;
  TensorDesc desc;
};

struct GraphNode {
  std::string name;
  std::string op;      // an op of the registry, or empty when callee is set
  std::string callee;  // global symbol of an offloaded function
  std::string kernel;  // symbol of a compiled host kernel (HostCode); op is then its first op
  std::vector<std::string> inputs;
  std::vector<GraphValue> outputs;
  Attrs attrs;
  int64_t group = -1;   // nodes of one pattern match share a group
  std::string pattern;  // "<backend>.<pattern>" of that match
};

struct Graph {
  std::string name;
  std::vector<GraphValue> inputs;
  std::vector<GraphValue> constants;
  std::vector<GraphNode> nodes;
  std::vector<std::string> outputs;
};

std::string graph_to_json(const Graph& g);
// Parses and validates (validate_graph). `what` names the source in errors.
Graph graph_from_json(const std::string& text, const std::string& what);
// Unique value names, every use after its definition, known ops with valid
// attributes whose inferred types equal the recorded outputs. Throws
// kiln::Error naming the graph and the node.
void validate_graph(const Graph& g, const std::string& what);

}  // namespace kiln
