// Running a kiln.graph's op nodes on the host with the reference kernels.
//
// --verify runs each offloaded function's graph and each compiled kernel's
// ops with it as the reference, and backends that emulate a device run
// their graphs with it. The VM runs its host program itself (vm.cc), with
// kernel and callee nodes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/runtime/backend.h"
#include "runtime/graph.h"

namespace kiln {

struct GraphRunHooks {
  NodeObserver observer;                         // each node's first output, may be empty
  std::vector<DispatchEvent>* events = nullptr;  // one "host" event per op node
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Checks each input against the graph's input types (an Error names the
// input), looks constants up by name, runs the nodes in order and returns the
// graph's outputs. A kernel or callee node is an Error.
std::vector<Tensor> execute_graph(const Graph& g, const std::vector<Tensor>& inputs,
                                  const std::map<std::string, Tensor>& constants,
                                  const GraphRunHooks& hooks = {});

double microseconds_since(std::chrono::steady_clock::time_point start);

// The event of one node run on the host: a reference kernel's (op) or a
// compiled kernel's (its symbol).
DispatchEvent host_event(const std::string& node, const std::string& op, double start_us, double duration_us);

}  // namespace kiln
