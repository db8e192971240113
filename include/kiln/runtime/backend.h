// The backend runtime contract.
//
// A backend runtime executes the offloaded functions its codegen produced.
// The VM owns one instance per backend per loaded module and calls:
//
//   init(functions, constants, options)   once: parse and check every
//                                          artifact, keep the constants;
//   run(symbol, inputs, outputs, ...)      many times, on caller-owned
//                                          tensors (outputs pre-allocated
//                                          by the caller; no copies).
//
// Rules: state is deterministic per run (nothing carried from one run to the
// next, no memory that grows with the number of runs); run() may be called
// from several threads at once (one loaded module run concurrently), so it
// keeps what it mutates in the call, not in members; each dispatch appends
// one DispatchEvent (name, engine, bytes moved, modelled cycles); errors are
// values (Status), never an abort, including an artifact of an unknown
// version or a malformed one.
//
// The built-in backends' factories come from their one list
// (src/backends/builtin.h); plugins and tests register theirs by name.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// An error as a value: an empty message means success.
struct Status {
  std::string message;
  bool ok() const { return message.empty(); }
  static Status success() { return {}; }
  static Status error(std::string m) { return {std::move(m)}; }
};

struct OperandPlacement {
  std::string name;  // the value's name in the graph
  std::string tier;  // "L0", "L1", "L2", "DRAM"
  int64_t bytes = 0;
};

// One dispatch: a node (or a fused group) on a device engine, or a host op.
struct DispatchEvent {
  std::string backend;   // "example_npu", or "host"
  std::string function;  // global symbol of the offloaded function ("" for host ops)
  std::string node;      // the graph node (the last node of a fused group)
  std::string op;        // "nn.conv2d+nn.relu" for a fused group
  std::string engine;    // "CONV", "MATRIX", ... ("CPU" for host ops)
  std::vector<OperandPlacement> operands;
  std::vector<int64_t> tile;  // tile shape of the output; empty when not tiled
  int64_t tiles = 1;
  bool fused = false;
  std::map<std::string, int64_t> bytes_per_tier;
  int64_t cycles = 0;   // modelled device cycles (0 for host ops)
  double start_us = 0;  // wall clock, relative to the run's start
  double duration_us = 0;
  // A backend's own figures ("vtcm_high_water_bytes" -> 36864), shown in
  // traces and dispatch logs.
  std::map<std::string, int64_t> counters = {};

  std::string to_json() const;  // one line, for --dispatch-log
};

// Receives the value of each graph node a backend computed (for --verify).
using NodeObserver = std::function<void(const std::string& node, const Tensor& value)>;

struct BackendFunction {
  std::string symbol;
  std::string artifact;  // what the backend's codegen produced
  // The function as a kiln.graph, which --verify runs on the reference
  // kernels; empty when the artifact is that graph.
  std::string graph = {};
};

class BackendRuntime {
 public:
  virtual ~BackendRuntime() = default;
  virtual std::string name() const = 0;
  virtual Status init(const std::vector<BackendFunction>& functions,
                      const std::map<std::string, Tensor>& constants,
                      const std::map<std::string, std::string>& options) = 0;
  // `events` and `observer` may be null / empty.
  virtual Status run(const std::string& symbol, const std::vector<Tensor>& inputs,
                     std::vector<Tensor>& outputs, std::vector<DispatchEvent>* events,
                     const NodeObserver& observer) = 0;
};

using BackendRuntimeFactory = std::function<std::unique_ptr<BackendRuntime>()>;

// Registers (or replaces) a backend runtime by name.
void register_backend_runtime(const std::string& name, BackendRuntimeFactory factory);
void unregister_backend_runtime(const std::string& name);
// nullptr when no runtime of that name is registered.
std::unique_ptr<BackendRuntime> make_backend_runtime(const std::string& name);
std::vector<std::string> backend_runtime_names();

// The built-in backends' runtimes by name (src/backends/builtin_runtimes.cc),
// registered on the first lookup.
std::vector<std::pair<std::string, BackendRuntimeFactory>> builtin_backend_runtimes();

}  // namespace kiln
