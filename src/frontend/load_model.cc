#include "frontend/load_model.h"

#include "ir/text.h"
#include "runtime/module_file.h"

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
  if (ends_with(path, ".kmod")) {
    if (!is_kmod_file(path)) read_kmod(path);  // says what is wrong with the file
    throw Error(path +
                " is a compiled module: `kiln run` runs it; this command needs the model (.kir or .onnx)");
  }
  throw Error("'" + path +
              "': unknown model format; kiln reads .kir (kiln IR text) and .onnx models, and compiled .kmod "
              "modules (made by `kiln compile`)");
}

}  // namespace kiln
