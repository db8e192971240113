// Running a kiln.graph on the host with the reference kernels.
//
// The VM runs its host program with this, and --verify runs each offloaded
// function's graph with it as the reference. Callee nodes (offloaded
// functions) and kernel nodes (compiled host kernels) are handed to a
// callback with pre-allocated outputs.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/runtime/backend.h"
#include "runtime/graph.h"

namespace kiln {

using CalleeFn = std::function<void(const GraphNode& node, const std::vector<Tensor>& inputs,
                                    std::vector<Tensor>& outputs)>;

struct GraphRunHooks {
  CalleeFn callee;                               // required when the graph has callee nodes
  NodeObserver observer;                         // each node's first output, may be empty
  std::vector<DispatchEvent>* events = nullptr;  // one "host" event per op node
  // Storage for the outputs of callee and kernel nodes (an undefined tensor:
  // a fresh allocation); the VM places them in its arena.
  std::function<Tensor(const GraphValue&)> allocate;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Checks each input against the graph's input types (an Error names the
// input), looks constants up by name, runs the nodes in order and returns the
// graph's outputs.
std::vector<Tensor> execute_graph(const Graph& g, const std::vector<Tensor>& inputs,
                                  const std::map<std::string, Tensor>& constants,
                                  const GraphRunHooks& hooks = {});

double microseconds_since(std::chrono::steady_clock::time_point start);

}  // namespace kiln
