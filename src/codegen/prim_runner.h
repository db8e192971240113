// Running one prim function on tensors: JIT-compiled for the host, or built
// for Hexagon and run under qemu-hexagon-static. `kiln run FILE.kir --target`
// and the tests use this, so both targets are driven the same way and their
// results can be compared.
//
// Which parameters are inputs and outputs comes from the function body: a
// buffer it only loads from needs an input; a buffer it stores to is an
// output, zero-filled first unless an input is given (so accumulations start
// from zero or from the given values); a buffer it hands to an extern
// function counts as stored to. Scalars are inputs (0-d tensors).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/target.h"
#include "kiln/runtime/tensor.h"
#include "tir/tir.h"

namespace kiln::codegen {

struct PrimParamInfo {
  std::string name;  // the buffer's name (or the scalar's)
  bool is_buffer = false;
  bool read = false;     // loaded from
  bool written = false;  // stored to: an output
  bool needs_input() const { return read && !written; }
  Shape shape;  // buffers: the constant shape; scalars: ()
  DType dtype = DType::Float32;
};

// The parameters of `f` in order. Throws kiln::Error for a parameter kiln
// cannot hold in a tensor (symbolic shapes, vectors, handles, ...).
std::vector<PrimParamInfo> prim_param_info(const tir::PrimFuncNode& f);

struct PrimRunOptions {
  Target target;
  std::vector<std::string> link_libs;     // as for `kiln build --link-lib`
  std::optional<uint64_t> vtcm_capacity;  // default: the target's
  bool static_scratchpad_plan = false;
  bool check_bounds = false;  // run-time index and divisor checks (tir check-bounds)
  std::string work_dir;       // Hexagon: where files go (default: a temporary folder)
  int timeout_seconds = 300;  // Hexagon: the emulator's time limit
};

struct PrimRunResult {
  std::vector<std::pair<std::string, Tensor>> outputs;  // the written buffers, in parameter order
  std::string vtcm_pool;  // the pool's figures after the call, from the side that ran it
  std::string log;        // Hexagon: what the executable printed
};

// Runs @f (before lowering) with inputs by parameter name. A missing input,
// an unknown name, or a wrong dtype or shape is an error naming the parameter;
// a kernel's failure is an error with the runtime's last error.
PrimRunResult run_prim_function(const tir::PrimFunc& f, const std::map<std::string, Tensor>& inputs,
                                const PrimRunOptions& options);

}  // namespace kiln::codegen
