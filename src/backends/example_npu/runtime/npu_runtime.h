// The example NPU's runtime: an emulator that really computes.
//
// init() parses every kiln.graph artifact, checks each node has an engine and
// groups fused pattern matches into single dispatches. run() executes each
// dispatch tile by tile: operands are placed in memory tiers, a working set
// above L1 is split into tiles whose input blocks are copied in, computed
// with the reference arithmetic (kiln::run_op on the blocks) and stored
// back; a fused activation is applied to each tile before it is stored, so
// the intermediate never reaches DRAM. Each dispatch reports its engine,
// tiers, tiles, bytes per tier and modelled cycles.
//
// Numerics: int8 work is exact. float32 results equal the reference
// interpreter's bit for bit except where tiling changes the order of a
// reduction (it does not today: K and reduction axes are never split), so
// tests use a tolerance of 1e-5 relative for float32 to leave room for that.
#pragma once

#include <memory>

#include "backends/example_npu/runtime/device.h"
#include "kiln/runtime/backend.h"

namespace kiln::example_npu {

std::unique_ptr<BackendRuntime> make_runtime();

}  // namespace kiln::example_npu
