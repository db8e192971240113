// One entry point for every model format kiln reads: `kiln run`, `kiln
// compile` and `kiln partition` call it so they accept .onnx directly.
#pragma once

#include <string>

#include "frontend/onnx/importer.h"
#include "ir/ir.h"

namespace kiln {

// Dispatches on the extension: .kir -> load_module, .onnx -> import_onnx
// (with `opts`: input shapes for symbolic dimensions). Any other extension
// is an error that names the accepted ones. "-" (standard input) and a pipe
// (`kiln run <(...)`) have no extension: they are read once, whole, and
// dispatched on their content (load_model_bytes).
Module load_model(const std::string& path, const ImportOptions& opts = {});

// True for "-" and for paths that are pipes: inputs to read exactly once.
bool is_stream_path(const std::string& path);

// A model from its bytes: .kmod by its magic number (an error: it is
// compiled already), .kir when it reads as text, ONNX otherwise. `what`
// names it in errors. A .kir from a stream has no folder for a side file, so
// its constants must be inline; ONNX external data is looked up in the
// current folder.
Module load_model_bytes(const std::string& bytes, const std::string& what, const ImportOptions& opts = {});

}  // namespace kiln
