// The hexagon backend's compiler side: its patterns (patterns.cc) and codegen.
//
// Codegen lowers each offloaded region with the ops' shared tensor-expression
// definitions (src/lower/), fused and scheduled for the DSP (VTCM tiles,
// src/schedule/scratchpad_schedule.cc), runs the tensor-IR build passes for
// the target and compiles every region's kernels, with kiln's Hexagon
// runtime, into ONE executable, kept as the module constant
// "hexagon.executable". Each region's artifact is its program
// (runtime/region_program.h).
//
// Options: `target` (hexagon-v66|v68|v69|v73, default hexagon-v68; `kiln
// --target hexagon-vNN` sets it), `hvx` (on: integer loops as HVX vectors;
// default off), `asm` (a file to write the regions' kernels to as Hexagon
// assembly) and `timeout` (seconds, for the runtime).
#pragma once

#include "backends/registry.h"
#include "codegen/target.h"

namespace kiln::hexagon {

// The DSP the options name; throws kiln::Error on an unknown name, option
// key or value.
codegen::Target target_from_options(const CodegenOptions& options);
// Whether the options ask for HVX vectors in integer loops (hvx=on).
bool hvx_from_options(const CodegenOptions& options);
// check_bounds=on|off (default off): run-time index and divisor checks.
bool check_bounds_from_options(const CodegenOptions& options);

BackendArtifacts codegen(const Module& m, const std::vector<Function>& functions,
                         const CodegenOptions& options);

}  // namespace kiln::hexagon
