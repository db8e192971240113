// The model's own names (ONNX names) for the inputs and outputs of a module.
//
// kiln's IR names values with identifiers ([A-Za-z0-9_], not starting with a
// digit), so the ONNX importer renames tensors: input `onnx::Flatten_0`
// becomes parameter %onnx__Flatten_0, input `0` becomes %v0. The importer
// records the model's names; they travel in the Module (module attributes,
// ir/model_names.h) and in the compiled .kmod (Executable::names), so that
// `kiln run`, the Python API and `kiln inspect` take and show the names the
// user knows:
//
//   ModelNames n;  n.inputs["onnx__Flatten_0"] = "onnx::Flatten_0";  n.outputs = {"19"};
//   find_input({"onnx__Flatten_0"}, n, "onnx::Flatten_0")   // 0; "%onnx__Flatten_0" too
//   output_files(n, 1)   // {"output_0.npy", "19.npy"}
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

struct ModelNames {
  // The model's name of each input, by kiln parameter name (without '%').
  std::map<std::string, std::string> inputs;
  // The model's name of each output (tuples flattened), in order; empty when
  // the model names none.
  std::vector<std::string> outputs;

  bool empty() const { return inputs.empty() && outputs.empty(); }
  bool operator==(const ModelNames& o) const { return inputs == o.inputs && outputs == o.outputs; }
};

// The index in `params` (kiln parameter names) of the input a user calls
// `name`: a model name first, then a kiln name (with or without '%').
std::optional<size_t> find_input(const std::vector<std::string>& params, const ModelNames& names,
                                 const std::string& name);

// How messages name parameter `param`: "onnx::Flatten_0 (%onnx__Flatten_0)",
// or "%x" when the model name is the kiln name or there is none.
std::string input_label(const std::string& param, const ModelNames& names);

// Every input for an error message: "onnx::Flatten_0 (%onnx__Flatten_0), x".
std::string input_list(const std::vector<std::string>& params, const ModelNames& names);

// A file name stem for a model name that is safe on any file system: bytes
// other than [A-Za-z0-9._-] become '_', a leading '.' or '-' gets a '_' in
// front (no hidden files, no ".." and no option-like names), an empty name is
// "_", and the stem is cut to 200 bytes. "onnx::Flatten_0" -> "onnx__Flatten_0",
// "a/b.c" -> "a_b.c", "19" -> "19".
std::string file_stem(const std::string& model_name);

// The files `kiln run --out` writes for output `index`: output_<index>.npy
// always, and <file_stem(model name)>.npy when the model names the output.
// Two outputs never share a file (compared case-insensitively, for file
// systems that fold case): a stem taken by an earlier output or by another
// output's output_<j>.npy gets "_<index>" appended (more, until it is free).
struct OutputFiles {
  std::string index_file;  // "output_0.npy"
  std::string named_file;  // "19.npy"; "" when unnamed or the same as index_file
};
std::vector<OutputFiles> output_files(const ModelNames& names, size_t count);

// The index of the output files (`kiln run --out DIR` writes it as
// DIR/outputs.json): the output's index, model name (null when unnamed),
// files, shape and dtype:
//   {"format": "kiln.outputs", "version": 1, "outputs": [{"index": 0,
//    "name": "19", "file": "19.npy", "index_file": "output_0.npy",
//    "shape": [1, 10], "dtype": "float32"}]}
std::string outputs_json(const ModelNames& names, const std::vector<OutputFiles>& files,
                         const std::vector<Tensor>& outputs);

}  // namespace kiln
