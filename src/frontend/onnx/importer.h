// The ONNX importer: an ONNX model (protobuf) to a kiln Module with one
// graph function @main.
//
//   ImportOptions opts;
//   opts.input_shapes["x"] = {1, 3, 320, 320};  // binds symbolic dimensions
//   Module m = import_onnx("model.onnx", opts);
//
// What it does, in order: parse the protobuf, convert a default-domain
// opset outside 7 to 18 (the converters' range) to the nearest end of it
// with ONNX's version converter (saying so on ImportOptions::log), list
// EVERY unsupported node at once, run ONNX's own checker,
// bind input shapes (an unbound symbolic dimension is an error that says how
// to bind it), turn initializers into constants (large ones named, so
// save_module puts them in the side file), then convert node by node into
// calls of registered kiln ops. A call whose arguments are all constants is
// evaluated on the spot, so shape computations (Shape, Gather, Concat, Cast,
// Slice, ... on shapes) fold to constants once input shapes are bound.
// The ONNX names of the inputs and outputs are kept in the module's
// attributes (ir/model_names.h), since parameters get identifiers
// (`onnx::Flatten_0` -> %onnx__Flatten_0, `0` -> %v0).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/model_names.h"

namespace kiln {

struct ImportOptions {
  // Static shapes for graph inputs, by input name (the ONNX name, or the
  // kiln parameter name it is imported as); required for inputs with
  // symbolic or unknown dimensions, checked against static ones.
  std::map<std::string, Shape> input_shapes;
  // Initializers with more elements than this become named constants (they
  // go to the module's side file when saved); smaller ones stay inline.
  int64_t inline_limit = 16;
  // Graph inputs frozen to these values: they become constants, not
  // parameters (the conformance runner uses this for inputs that carry
  // shapes or axes, which kiln needs statically).
  std::map<std::string, Tensor> constant_inputs;
  // Notes about the import (an opset conversion), one line each; nullptr
  // writes them to std::cerr.
  std::ostream* log = nullptr;
};

// The model uses something kiln cannot import (an operator, an opset, an
// element type, an attribute value). The conformance runner counts these as
// "unsupported" rather than as failures.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

Module import_onnx(const std::string& path, const ImportOptions& opts = {});
// The same from the serialized bytes; `what` names the source in messages
// and `base_dir` resolves external tensor data.
Module import_onnx_bytes(const std::string& bytes, const std::string& what, const ImportOptions& opts = {},
                         const std::string& base_dir = "");

// The model's input names by the kiln parameter names import_onnx gives
// them, and its output names, read from the graph's inputs and outputs alone
// (no shapes need binding): what `kiln inspect model.onnx` shows.
ModelNames onnx_model_names(const std::string& path);

// Parses "NAME=1,3,320,320" (the --input-shape flag) into opts.input_shapes.
void parse_input_shape_flag(const std::string& flag, ImportOptions& opts);

// The ONNX operators (default domain) the importer can convert right now:
// those with a converter whose kiln ops are all registered.
std::vector<std::string> supported_onnx_ops();

}  // namespace kiln
