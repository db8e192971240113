// Compiler-side backend registry: each backend's patterns and codegen.
//
// register_all_backends() is the ONE place that adds the built-in backends
// (called once by pattern_registry() on first use); tests add their own
// backends with the same calls. The runtime side of a backend registers
// separately (register_builtin_backend_runtimes in src/runtime/backend.h), so
// the runtime library never links the compiler.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kiln {

class PatternRegistry;

// Per-backend codegen options: key -> value ("tile_policy" -> "max").
using CodegenOptions = std::map<std::string, std::string>;

// What a backend's codegen produces: one serialized artifact per offloaded
// function (by global_symbol) and the constants those artifacts reference by
// name (stored outside the artifacts, in the .kmod's constant section).
struct BackendArtifacts {
  std::map<std::string, std::string> artifacts;
  std::map<std::string, Tensor> constants;
};

// Turns all offloaded functions of one backend into artifacts. Called once
// per backend with all of its functions.
using CodegenFn = std::function<BackendArtifacts(const Module& m, const std::vector<Function>& functions,
                                                 const CodegenOptions& options)>;

// Throws kiln::Error naming an option key or value the backend does not take,
// so a misspelt option fails before partitioning, whatever is offloaded.
using CheckOptionsFn = std::function<void(const CodegenOptions& options)>;

struct BackendCodegen {
  std::string backend;
  std::string description;
  CodegenFn codegen;
  CheckOptionsFn check_options = {};  // unset: options are not checked before codegen
};

// Replaces an entry of the same backend.
void register_backend_codegen(BackendCodegen codegen);
const BackendCodegen* find_backend_codegen(const std::string& backend);
void remove_backend_codegen(const std::string& backend);

// Registers the built-in backends' patterns and codegens (example_npu).
void register_all_backends(PatternRegistry& patterns);

// Each backend's entry point, called from register_all_backends.
void register_example_npu(PatternRegistry& patterns);

}  // namespace kiln
