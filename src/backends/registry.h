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
  // Lines for the compile summary (the hexagon backend: each region's
  // kernels and static VTCM plan).
  std::vector<std::string> notes = {};
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

struct RunCodegenOptions;  // transform/partition.h

// One codegen option as `kiln --option` and the Python API give it: `key`
// ("name" for every backend, "backend.name" for one of `backends`) set to
// `value` in `o`. `flag` names the option in errors ("--option x.l1=8K");
// `not_given` says what to do when the backend is not one of `backends`.
// A backend name that matches no registered backend is an error listing them.
void add_codegen_option(RunCodegenOptions& o, const std::string& key, const std::string& value,
                        const std::vector<std::string>& backends, const std::string& flag,
                        const std::string& not_given);
// Each of `backends`' own check of its options (check_options).
void check_codegen_options(const RunCodegenOptions& o, const std::vector<std::string>& backends);
// "example_npu, ...": the registered backends, for messages.
std::string registered_backends();

// Registers the built-in backends' patterns and codegens (example_npu, hexagon).
void register_all_backends(PatternRegistry& patterns);

// Each backend's entry point, called from register_all_backends.
void register_example_npu(PatternRegistry& patterns);
void register_hexagon(PatternRegistry& patterns);

}  // namespace kiln
