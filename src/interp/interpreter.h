// The reference interpreter: runs a graph function of a module on the host
// with the reference kernels of the op registry.
//
// It is the ground truth that every backend and every compiled path is
// compared with, so it is deliberately simple: bindings run in order, each op
// through OpDef::kernel, calls of module functions recursively. A value of a
// type with a bounded dynamic leading axis (<=N) is carried as the kernel
// left it, trimmed to its actual extent; results come back trimmed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln {

// A runtime value: a tensor or a tuple of values.
struct Value {
  Tensor tensor;              // when !is_tuple
  std::vector<Value> fields;  // when is_tuple
  bool is_tuple = false;

  static Value of(Tensor t) { return Value{std::move(t), {}, false}; }
  static Value tuple(std::vector<Value> f) { return Value{Tensor(), std::move(f), true}; }
};

// Tensors of a value, tuples flattened in order.
std::vector<Tensor> flatten_value(const Value& v);

// Called after each binding is computed (for --verify style bisecting and
// tracing); may be empty.
using BindingObserver = std::function<void(const FunctionNode& fn, const Binding& b, const Value& v)>;

struct InterpretOptions {
  BindingObserver observer;
};

// Runs `function` on args (one tensor per parameter; parameters of tuple type
// are not supported as entry arguments). Checks each argument's shape and
// dtype against the parameter's type and throws kiln::Error naming the
// parameter on a mismatch. Returns the result, tuples flattened.
std::vector<Tensor> interpret(const Module& m, const std::string& function, const std::vector<Tensor>& args,
                              const InterpretOptions& opts = {});

// Same, returning the structured value.
Value interpret_value(const Module& m, const std::string& function, const std::vector<Value>& args,
                      const InterpretOptions& opts = {});

}  // namespace kiln
