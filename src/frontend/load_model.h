// One entry point for every model format kiln reads: `kiln run`, `kiln
// compile` and `kiln partition` call it so they accept .onnx directly.
#pragma once

#include <string>

#include "frontend/onnx/importer.h"
#include "ir/ir.h"

namespace kiln {

// Dispatches on the extension: .kir -> load_module, .onnx -> import_onnx
// (with `opts`: input shapes for symbolic dimensions). Any other extension
// is an error that names the accepted ones.
Module load_model(const std::string& path, const ImportOptions& opts = {});

}  // namespace kiln
