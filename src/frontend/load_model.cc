#include "frontend/load_model.h"

#include <sys/stat.h>

#include "ir/text.h"
#include "runtime/file_io.h"
#include "runtime/module_file.h"

namespace kiln {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// .kir text starts with a keyword, a comment or white space; an ONNX model
// with a protobuf field tag (ir_version is field 1: byte 0x08), never printable.
bool looks_like_text(const std::string& bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '#' || (c >= 'a' && c <= 'z');
  }
  return true;  // empty or blank: the .kir parser says what is missing
}

}  // namespace

bool is_stream_path(const std::string& path) {
  if (path == "-") return true;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

Module load_model_bytes(const std::string& bytes, const std::string& what, const ImportOptions& opts) {
  if (is_kmod_bytes(bytes))
    throw Error(what +
                " is a compiled module: `kiln run` runs it; this command needs the model (.kir or .onnx)");
  if (!looks_like_text(bytes)) return import_onnx_bytes(bytes, what, opts, ".");
  if (!opts.input_shapes.empty())
    throw Error(what + ": --input-shape applies to .onnx models only; a .kir module has static shapes");
  return parse_module(bytes, what, nullptr);
}

Module load_model(const std::string& path, const ImportOptions& opts) {
  if (is_stream_path(path))
    return load_model_bytes(read_input(path, "model"), path == "-" ? "standard input" : path, opts);
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
