// Tensor-IR passes, one per file in this folder, named after the pass.
//
// Each pass takes a prim function and returns the rewritten one (the same
// node when nothing changed); checks throw kiln::Error. run_tir_pass applies
// a pass by its name, which is how golden tests and `kiln opt` name them.
// pipeline.cc holds the order they run in for a build.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tir/tir.h"

namespace kiln::tir {

struct TirPassOptions {
  // The target's scratchpad (VTCM) capacity in bytes: Hexagon v66 256 KiB,
  // v68 4 MiB, v69 and later 8 MiB.
  uint64_t scratchpad_capacity = 4ull << 20;
  // lower-scratchpad-alloc: one pool allocation per function, buffers at
  // liveness-based offsets, instead of one allocation per buffer.
  bool static_scratchpad_plan = false;
  // verify-scratchpad-capacity: how many tasks of a parallel loop may hold
  // their scratchpad buffers at once (at most the loop's extent). 0: the host
  // runtime's threads (runtime/thread_pool.h: KILN_NUM_THREADS, else the
  // machine's); 1 where a parallel loop runs as one task (kiln's Hexagon
  // runtime).
  int parallel_tasks = 0;
  // lower-workspace-alloc: main-memory buffers larger than this (or of a
  // dynamic size) come from the runtime's workspace instead of the stack.
  uint64_t stack_limit_bytes = 64ull << 10;
  // vectorize-loops: the target's vector register width in bytes (AVX2 32,
  // AVX-512 64); 0 leaves vectorized loops to LLVM's loop vectorizer.
  int64_t vector_bytes = 0;
  // vectorize-loops: false makes loops that touch floats scalar, dropping
  // their hint (Hexagon: kiln asks for no HVX floating point, and LLVM
  // cannot select float vector operations without it).
  bool vector_float = true;
  // vectorize-loops: loops it does not rewrite lose their hint too, instead
  // of leaving them to LLVM's loop vectorizer (which the hint forces).
  bool drop_vector_hints = false;
  // form-dot-products: int8 (or uint8 by int8) products accumulated by
  // fours become dot_i8x4 of this many int32 lanes (Hexagon model regions:
  // 32, one HVX vrmpy; x86 with VNNI: 16 or 8, one vpdpbusd); 0 turns the
  // pass off.
  int64_t dot_lanes = 0;
  // form-dot-products: int16 products accumulated by pairs into int32
  // become dot_i16x2 of this many int32 lanes (x86: 8 with AVX2, 16 with
  // AVX-512BW, one vpmaddwd and an add); 0: left as they are.
  int64_t dot16_lanes = 0;
  // interleave-accumulators: the target's vector registers (AVX2 16,
  // AVX-512 32); 0 turns the pass off.
  int64_t vector_registers = 0;
  // check-bounds: run-time checks of buffer indices and integer divisors
  // (`--check-bounds`); without it only constant faults are refused.
  bool check_bounds = false;
};

// check-bounds: constant indices outside their buffer and constant zero
// divisors are a kiln::Error; with options.check_bounds, other indices and
// divisors are checked at run time (the kernel returns -1 with the kernel,
// buffer, dimension, index and extent in the last error).
PrimFunc check_bounds(const PrimFunc& f, const TirPassOptions& options);

// flatten-buffers: every buffer becomes one-dimensional; indices are
// linearised with the buffer's strides (row-major when it has none).
PrimFunc flatten_buffers(const PrimFunc& f);

// simplify: folds constants and arithmetic identities, drops branches and
// loops whose condition or extent is a known constant.
PrimFunc simplify(const PrimFunc& f);
Expr simplify_expr(const Expr& e);
Stmt simplify_stmt(const Stmt& s);

// vectorize-loops: vectorized loops of a constant extent become vector
// expressions (ramps, broadcasts, vector loads and stores) sized to
// options.vector_bytes; loops it cannot rewrite keep their hint.
PrimFunc vectorize_loops(const PrimFunc& f, const TirPassOptions& options = {});

// unroll-loops: unrolled loops of a constant extent become copies of their
// body with the variable replaced by each value.
PrimFunc unroll_loops(const PrimFunc& f);

// partition-loops (partition_loops.cc): a serial loop whose body tests its
// variable against constants runs as the iterations before all tests hold,
// those where they all hold, and those after; simplify then drops the
// middle loop's tests and clamps.
PrimFunc partition_loops(const PrimFunc& f);

// promote-accumulators: in a serial loop whose body is a sequence of
// stores, memory updated at indices that do not change across the loop is
// held in a local buffer (registers) for the whole loop, loaded before it
// and stored after it.
PrimFunc promote_accumulators(const PrimFunc& f);

// interleave-accumulators: a serial loop that only adds into fewer local
// accumulators than a CPU keeps multiply-adds in flight runs its
// iterations in turns over copies of them (as many as
// options.vector_registers hold), summed after the loop.
PrimFunc interleave_accumulators(const PrimFunc& f, const TirPassOptions& options);

// share-common-subexpressions: a part of a statement's expressions that it
// computes more than once (an inlined epilogue's input) is bound to a
// variable in a let before the statement, computed once.
PrimFunc share_common_subexpressions(const PrimFunc& f);

// verify-scratchpad-capacity: the scratchpad bytes the lowered function will
// hold at once must fit options.scratchpad_capacity. That is the plan that
// will run: with options.static_scratchpad_plan the plan's pool
// (plan_scratchpad) plus what the tasks of a parallel loop allocate, else the
// peak of live allocations. The buffers a task of a parallel loop allocates
// count once per task that may run at once (options.parallel_tasks). The
// error lists the buffers at the peak and their sizes. Runs before
// lower-scratchpad-alloc (it reads allocate statements).
void verify_scratchpad_capacity(const PrimFuncNode& f, const TirPassOptions& options);
// The most scratchpad bytes live at once in one task (a parallel loop's
// tasks one at a time), each allocation rounded up to its alignment.
uint64_t scratchpad_peak_bytes(const PrimFuncNode& f);

// lower-scratchpad-alloc: each allocation in a scratchpad scope becomes
// HexagonBackendAllocateVTCM(bytes, alignment), a null check that records an
// error naming the buffer, its bytes and scope and returns -1, and
// HexagonBackendFreeVTCM on every path out of the buffer's scope.
PrimFunc lower_scratchpad_alloc(const PrimFunc& f, const TirPassOptions& options = {});
// The static plan lower-scratchpad-alloc makes with
// options.static_scratchpad_plan: one pool of `bytes` (aligned to the
// largest alignment) and each scratchpad buffer outside parallel loops at an
// offset in it, by offset. Empty when there are no such buffers.
struct ScratchpadPlacement {
  const BufferNode* buffer;
  int64_t bytes, offset;
};
struct ScratchpadPlan {
  int64_t bytes = 0;
  int64_t alignment = 1;
  std::vector<ScratchpadPlacement> placements;
};
ScratchpadPlan plan_scratchpad(const PrimFuncNode& f);

// lower-workspace-alloc: each global/local allocation of a dynamic size or
// more than options.stack_limit_bytes becomes KilnBackendAllocWorkspace(bytes,
// alignment), a null check naming the buffer, and KilnBackendFreeWorkspace on
// every path out of its scope; smaller ones stay on the stack.
PrimFunc lower_workspace_alloc(const PrimFunc& f, const TirPassOptions& options = {});

// form-dot-products: a loop over options.dot_lanes or more int32 columns
// around a loop of four int8 (or uint8 by int8) products (contiguous in one
// operand, the same four bytes of the other for every column) becomes one
// dot_i8x4 per dot_lanes columns; the rest of the columns keep the loop.
// Needs flat buffers. Off when dot_lanes is 0.
PrimFunc form_dot_products(const PrimFunc& f, const TirPassOptions& options = {});

// Applies the pass called `name`; unknown names are an error listing the known ones.
PrimFunc run_tir_pass(const std::string& name, const PrimFunc& f, const TirPassOptions& options = {});
const std::vector<std::string>& tir_pass_names();

// The build pipeline: capacity check, scratchpad lowering, workspace
// lowering, flattening, simplification, vectorization, unrolling and
// simplification again, verifying after each pass.
const std::vector<std::string>& tir_build_passes();
PrimFunc lower_for_build(const PrimFunc& f, const TirPassOptions& options = {});

}  // namespace kiln::tir
