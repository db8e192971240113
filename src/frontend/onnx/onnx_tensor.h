// ONNX TensorProto <-> kiln::Tensor, and the element-type mapping.
//
// Used by the importer (initializers, Constant nodes, tensor attributes) and
// by the conformance runner (the test data sets' input_*.pb / output_*.pb).
// Every fault in the data (an element type kiln has no dtype for, a byte
// count that does not match the shape, a missing external file) is a
// kiln::Error naming the tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/runtime/tensor.h"
#include "onnx/onnx_pb.h"

namespace kiln::onnx_import {

// ONNX's name for an element type ("FLOAT", "DOUBLE", ...).
std::string onnx_type_name(int32_t elem_type);
// The kiln dtype of an ONNX element type, or nullopt when kiln has none.
std::optional<DType> dtype_from_onnx(int32_t elem_type);
int32_t onnx_type_from_dtype(DType t);

// Decodes one tensor. `base_dir` resolves external data (relative paths).
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& base_dir = "");
onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name = "");

// Reads a serialized TensorProto file (the test data sets' .pb files).
Tensor read_tensor_file(const std::string& path);

}  // namespace kiln::onnx_import
