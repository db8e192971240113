// Compiler-side backend registry: one Backend object per backend.
//
// A backend is data plus functions: its name and version, the patterns it
// claims (with their checks and priorities), the options it takes (typed,
// with defaults), its codegen and its runtime factory. register_backend()
// is the one call that makes it known: its patterns go into
// pattern_registry(), its runtime to the runtime registry
// (kiln/runtime/backend.h), its codegen and options here.
//
// The built-in backends are listed once, in backends/builtin.h; this
// registry registers them on first use, and the runtime library registers
// their runtimes from the same list (backends/builtin_runtimes.cc) without
// linking the compiler. Plugins (tools/kiln/plugins.cc) and tests call
// register_backend() themselves.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "kiln/runtime/backend.h"
#include "pattern/registry.h"

namespace kiln {

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

// Throws kiln::Error on options that pass their declared types but not the
// backend's own rules (memory tiers that shrink, an unknown DSP).
using CheckOptionsFn = std::function<void(const CodegenOptions& options)>;

// How an option's value is read (the same numbering as the plugin ABI's
// kiln_plugin_option_type).
enum class OptionType {
  String,  // any text
  Int,     // a decimal integer
  Size,    // a positive byte count: 4096, 64K, 1M
  Choice,  // one of `choices`
  File,    // a path (not checked for existence: it may be an output)
};

struct BackendOption {
  std::string name;
  OptionType type = OptionType::String;
  std::string default_value;  // "" when the option has none (unset means off)
  std::string description;
  std::vector<std::string> choices = {};  // OptionType::Choice
};

struct Backend {
  std::string name;  // an identifier: `--backend NAME`, "NAME.pattern"
  std::string version;
  std::string description;
  std::vector<PatternEntry> patterns;  // each named "NAME.<pattern>"
  std::vector<BackendOption> options;
  CodegenFn codegen;
  BackendRuntimeFactory runtime = {};  // empty: registered by the runtime library itself
  CheckOptionsFn check_options = {};   // after the typed checks
  // false: the options are not declared (a plugin without declarations, a
  // Python backend) and go to its checks and codegen unchecked.
  bool options_declared = true;
};

// Registers a backend (replacing one of the same name with its patterns).
// Throws kiln::Error on a malformed backend.
void register_backend(Backend backend);
void unregister_backend(const std::string& name);
// nullptr when no backend of that name is registered.
const Backend* find_backend(const std::string& name);
// Registered backends in registration order (the built-ins first).
std::vector<const Backend*> registered_backend_list();
// "example_npu, ...": the registered backends, for messages.
std::string registered_backends();

// One option value checked against its declaration: the error names the
// backend, the option, the value and what was expected.
void check_option_value(const std::string& backend, const BackendOption& decl, const std::string& value);
// The declared defaults under `options` (options given win).
CodegenOptions with_defaults(const Backend& backend, const CodegenOptions& options);
// "l1=SIZE (default 256K): ...", one line per option, for listings.
std::vector<std::string> describe_options(const Backend& backend);

struct RunCodegenOptions;  // transform/partition.h

// One codegen option as `kiln --option` and the Python API give it: `key`
// ("name" for every backend, "backend.name" for one of `backends`) set to
// `value` in `o`. `flag` names the option in errors ("--option x.l1=8K");
// `not_given` says what to do when the backend is not one of `backends`.
// A backend name that matches no registered backend is an error listing them.
void add_codegen_option(RunCodegenOptions& o, const std::string& key, const std::string& value,
                        const std::vector<std::string>& backends, const std::string& flag,
                        const std::string& not_given);
// Each of `backends`' options against its declarations, then its own check.
void check_codegen_options(const RunCodegenOptions& o, const std::vector<std::string>& backends);

// For backends whose patterns are added to pattern_registry() separately (the
// Python package's): a codegen under a backend name, without patterns.
struct BackendCodegen {
  std::string backend;
  std::string description;
  CodegenFn codegen;
  CheckOptionsFn check_options = {};
};
void register_backend_codegen(BackendCodegen codegen);
void remove_backend_codegen(const std::string& backend);

}  // namespace kiln
