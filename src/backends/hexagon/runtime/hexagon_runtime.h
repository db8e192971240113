// The hexagon backend's runtime: regions run on the DSP, one session per
// loaded module.
//
// init() checks every region program, writes the module's Hexagon executable
// to a private temporary file, starts the DSP session (dsp_session.h) and
// loads every region's slots, steps and constants into it once. run() sends a
// region's inputs and receives its outputs straight into the caller's
// tensors, and reports one dispatch: wall time, the kernels it ran, and the
// VTCM pool's figures (high-water mark, capacity, allocations) as counters.
//
// Options: `timeout` (seconds an answer may take, default 300).
#pragma once

#include <memory>

#include "kiln/runtime/backend.h"

namespace kiln::hexagon {

std::unique_ptr<BackendRuntime> make_runtime();

}  // namespace kiln::hexagon
