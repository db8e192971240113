// Models of opsets the converters do not read natively, converted with
// libonnx's version converter (onnx/version_converter/convert.h).
//
// Internal to src/frontend/onnx; importer.cc decides when to convert and
// says so on ImportOptions::log.
#pragma once

#include <cstdint>
#include <string>

#include "onnx/onnx_pb.h"

namespace kiln::onnx_import {

// The newest default-domain opset the installed libonnx knows (its schemas,
// checker and version converter).
int64_t newest_known_opset();

// `model` (default-domain opset `opset`) converted to opset `target`. Throws
// UnsupportedError with the converter's message, prefixed by `what`, when
// the converter cannot convert it.
onnx::ModelProto convert_opset(const onnx::ModelProto& model, int64_t opset, int64_t target,
                               const std::string& what);

}  // namespace kiln::onnx_import
