// Building an Executable (what a .kmod holds) from a partitioned module.
//
// Runs RunCodegen, lowers the entry function to the host program (calls of
// offloaded functions become callee nodes, everything else runs on the
// host's reference kernels) and gathers every constant by name.
#pragma once

#include <string>

#include "runtime/vm.h"
#include "transform/partition.h"

namespace kiln {

// `notes`, when given, receives the backends' summary lines ("hexagon: ...").
Executable build_executable(const Module& partitioned, const std::string& entry = "main",
                            const RunCodegenOptions& codegen = {}, std::vector<std::string>* notes = nullptr);

}  // namespace kiln
