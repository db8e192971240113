#include "frontend/load_model.h"

#include "ir/text.h"

namespace kiln {

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Module load_model(const std::string& path, const ImportOptions& opts) {
  if (ends_with(path, ".onnx")) return import_onnx(path, opts);
  if (ends_with(path, ".kir")) {
    if (!opts.input_shapes.empty())
      throw Error(path + ": --input-shape applies to .onnx models only; a .kir module has static shapes");
    return load_module(path);
  }
  throw Error("'" + path + "': unknown model format; kiln reads .kir (kiln IR text) and .onnx files");
}

}  // namespace kiln
