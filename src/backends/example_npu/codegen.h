// The example NPU's codegen: each offloaded function becomes a kiln.graph.
#pragma once

#include "backends/registry.h"

namespace kiln {

BackendArtifacts example_npu_codegen(const Module& m, const std::vector<Function>& functions,
                                     const CodegenOptions& options);

}  // namespace kiln
