// The model compile pipeline: one function every path takes (`kiln
// compile`, `kiln run` with or without --backend, the C++ API).
//
//   graph optimizations   transform/pipeline.cc: graph_optimization_passes()
//   partition             backends claim regions (when backends are given)
//   backend codegen       offloaded regions to their backends' artifacts;
//                         the rest becomes the host program
//   fuse                  host ops grouped into kernels (driver/kernels.h)
//   lower + schedule      each kernel's ops as tensor expressions, scheduled
//   tensor-IR passes      tir::tir_build_passes(), by name
//   LLVM                  one shared object of host kernels for the host CPU
//   artifact              the Executable a .kmod holds
//
// compile.cc lists the stages in this order; --print-after-all prints the
// module, the host program or the prim functions after each, and
// --time-passes times each.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "runtime/vm.h"
#include "transform/partition.h"

namespace kiln::driver {

struct CompileOptions {
  std::string entry = "main";
  // Backends to offload to (partition.backends empty: everything on the host).
  PartitionOptions partition;
  bool merge = true;
  RunCodegenOptions codegen;
  // The CPU the host code is compiled for (`--target llvm -mcpu=...`): the
  // machine's by default.
  codegen::Target target = codegen::host_target();
  // Float32 convs and the elementwise ops between them run in channel
  // blocks of the target's vector width (the graph pass convert-layout).
  bool blocked_layout = true;
  // float16 values stay float32 between compiled host ops, rounded to
  // float16 only where a float16 tensor is stored (widen-float16's
  // excess_precision): false rounds each op's result, as the reference
  // kernels do.
  bool float16_excess_precision = false;
  // Ops left on their reference kernels are an error naming them.
  bool strict_compile = false;
  // Compile host ops at all (false: every host op on its reference kernel).
  bool compile_host = true;
  // Run-time checks of indices and integer divisors in the host kernels
  // (tir check-bounds): a fault is an error naming kernel, buffer and index.
  bool check_bounds = false;
  bool print_after_all = false;
  bool time_passes = false;
  std::ostream* log = nullptr;  // where printing and timing go (stderr when null)
};

struct CompileSummary {
  bool offloaded = false;
  PartitionReport report;
  int host_ops = 0;          // op nodes of the host program before fusion
  int lowered_ops = 0;       // of which compiled
  int kernels = 0;           // kernel calls in the host program
  int distinct_kernels = 0;  // prim functions
  std::map<std::string, std::pair<int, std::string>> reference_ops;  // op -> (count, reason)
  std::string cpu;                                                   // the CPU the host code was compiled for
  std::vector<std::string> cpu_features;                             // the recorded features it may use
  std::string caches;              // the caches its schedules were sized for (schedule::describe_caches)
  int64_t arena_bytes = 0;         // the intermediate values' arena
  int64_t intermediate_bytes = 0;  // their sizes added up
  double compile_ms = 0;
  std::vector<std::string> backend_notes;  // "hexagon: region ... VTCM plan ...", one line each
  // "compiled 412 host ops into 130 kernels (95 distinct); 0 ops on reference kernels"
  // and, when some remain, "(take x2: ..., topk x1: ...)".
  std::string str() const;
};

Executable compile_model(const Module& m, const CompileOptions& opts, CompileSummary* summary = nullptr);

}  // namespace kiln::driver
