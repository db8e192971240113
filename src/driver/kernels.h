// The host half of the model compile pipeline: the host program's ops
// grouped into fused kernels, each lowered to a prim function.
//
// plan_kernels (fuse_kernels.cc) walks the host program in order and grows
// groups by the op patterns of src/lower/lower.h:
//   - injective ops chain (add -> relu -> reshape is one kernel);
//   - a reduction takes the injective ops before it as its prologue
//     (exp -> sum), and injective ops after it (sum -> divide);
//   - an anchor (conv, matmul, pooling) takes the injective ops after it as
//     its epilogue (conv2d -> add -> hard_swish), never a second anchor;
//   - a value joins its consumer's group only when that consumer is its one
//     use and it is not a program output, so every group has one result and
//     grouping never makes a cycle;
//   - an injective op whose inputs end several such groups joins one (the
//     one with an anchor or a reduction, if any) and takes in the others
//     that hold injective ops only (det's upsampling beside the elementwise
//     ops that both feed an add: one kernel, the upsampled image never
//     stored); a group's ops run in program order.
// Ops without a lowering (or whose instance cannot be lowered) stay op nodes
// and run on their reference kernels; the plan says which and why.
//
// lower_planned_kernels (lower_kernels.cc) writes one prim function per
// distinct kernel (identical groups share a symbol) and rewrites the host
// program: each group becomes one node calling its kernel.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lower/lower.h"
#include "runtime/graph.h"
#include "runtime/host_code.h"
#include "runtime/vm.h"
#include "schedule/schedule.h"

namespace kiln::driver {

struct PlannedKernel {
  std::vector<size_t> nodes;        // indices into the host program, in order
  std::vector<std::string> params;  // the values it reads from outside, in order
  lower::KernelSpec spec;           // name and spec; the name says what it contains
};

struct KernelPlan {
  std::vector<PlannedKernel> kernels;
  // Ops left on their reference kernels: op name -> (count, one reason).
  std::map<std::string, std::pair<int, std::string>> reference_ops;
  int lowered_ops = 0;
};

// Ops are probed for lowering as scheduled for `cpu` (the compile target's).
KernelPlan plan_kernels(const Graph& host, const schedule::CpuTarget& cpu = schedule::host_cpu_target());

struct LoweredKernels {
  Graph host;                        // the program with kernel nodes
  std::vector<HostKernel> kernels;   // one per distinct kernel
  std::vector<tir::PrimFunc> funcs;  // their prim functions, as lowered (before the build passes)
};

// Scheduled for `cpu`.
LoweredKernels lower_planned_kernels(const Graph& host, const KernelPlan& plan,
                                     const schedule::CpuTarget& cpu);

// The arena of the program's intermediate values (plan_memory.cc).
MemoryPlan plan_memory(const Graph& host);

}  // namespace kiln::driver
