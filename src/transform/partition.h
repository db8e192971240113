// Partitioning a module for backends: options, the explanation of every
// decision, and the passes that do it (one per file):
//
//   fuse_ops_by_pattern.cc        pattern matches -> composite functions
//   merge_composite_functions.cc  adjacent composites of one backend -> one region
//   run_codegen.cc                each backend's codegen, once, with all its regions
//   partition.cc                  the driver (fuse, merge, strict) and the report
//
// Names: a composite function carries Composite = "<backend>.<pattern>" and
// Primitive = 1; an offloaded function (a region) carries Codegen =
// "<backend>" and global_symbol = its name. Without merging
// (annotate_codegen), each composite is its own region and carries all three.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/registry.h"
#include "ir/ir.h"

namespace kiln {

// Backend options: the global ones go to every backend, per-backend ones
// override them (`--option key=value` / `--option backend.key=value`).
struct RunCodegenOptions {
  CodegenOptions global;                          // given to every backend
  std::map<std::string, CodegenOptions> backend;  // per backend, over the global ones
  // What `backend` sees: the global options with its own on top.
  CodegenOptions for_backend(const std::string& backend) const;
};

struct PartitionOptions {
  std::vector<std::string> backends;  // which backends may claim ops; empty: every registered one
  RunCodegenOptions backend_options;  // what pattern checks see (the device they judge against)
  bool bind_constants = true;         // constants stay inside composites; false: they become parameters
  bool annotate_codegen = true;       // each composite is an offloaded function of its own
  int64_t min_region_size = 1;        // regions with fewer ops go back to the host
  bool strict = false;                // fail when any op would fall back to the host
};

// Reads pass options given by name ("backends=a|b bind-constants=0 ..."), as
// `kiln opt --passes 'fuse-ops-by-pattern{...}'` passes them. Unknown keys
// are an error listing the known ones.
PartitionOptions partition_options_from(const std::map<std::string, std::string>& opts);

// The decision about one op call of a partitioned function.
struct OpDecision {
  std::string function;  // where the op was, without '@'
  std::string var;       // the variable it defined, without '%'
  std::string op;
  std::string backend;             // empty: stays on the host
  std::string pattern;             // "<backend>.<pattern>" that claimed it
  std::string region;              // the offloaded function it ended in
  std::string reason;              // why it stays on the host
  std::vector<std::string> notes;  // e.g. a merge refused because of a cycle

  bool offloaded() const { return !backend.empty(); }
};

struct PartitionReport {
  std::vector<OpDecision> ops;

  OpDecision* find(const std::string& function, const std::string& var);
  int64_t offloaded_count() const;
  int64_t region_count() const;
  // "12 of 14 ops offloaded to my_npu in 3 regions; 2 on the host"
  std::string summary() const;
  // One line per op: who took it, or why not.
  std::string explain() const;
  std::string to_json() const;
  // The graph of the module BEFORE partitioning in Graphviz DOT: one box per
  // op, one cluster per region, coloured by backend; host ops in white.
  std::string to_dot(const Module& original) const;
};

Module fuse_ops_by_pattern(const Module& m, const PartitionOptions& opts = {},
                           PartitionReport* report = nullptr);
Module merge_composite_functions(const Module& m, const PartitionOptions& opts = {},
                                 PartitionReport* report = nullptr);

// Partitions for the given backends: fuse, then (when `merge`) merge, then the
// strict check. The report explains every op.
Module partition_module(const Module& m, const PartitionOptions& opts, bool merge, PartitionReport* report);

// Calls each backend's codegen once with all of its offloaded functions.
// Checks every offloaded function has a global_symbol unique in the module
// and a registered backend. Records the symbols in the module attribute
// "external_symbols" and returns the artifacts per backend in `out`.
Module run_codegen(const Module& m, const RunCodegenOptions& opts = {},
                   std::map<std::string, BackendArtifacts>* out = nullptr);

// Helpers shared by the partition passes.
bool is_partitionable(const FunctionNode& f);  // not a composite nor an offloaded function
// A function name not yet in `m` (nor in `taken`), from `base`.
std::string unique_function_name(const Module& m, const std::string& base, std::vector<std::string>& taken);

}  // namespace kiln
