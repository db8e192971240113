// The files `kiln build --emit` writes: LLVM IR or assembly as text, an
// object, a host shared library (linked with ld.lld, in process) or a Hexagon static
// executable (with kiln's Hexagon runtime and the harness table).
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <string>
#include <vector>

#include "codegen/hexagon.h"
#include "codegen/lld.h"
#include "codegen/llvm_internal.h"

namespace kiln::codegen {

namespace {

void write_object(const std::vector<tir::PrimFunc>& funcs, const CodegenOptions& options,
                  const std::string& path, bool with_harness) {
  use_loop_strength_reduction(options.target);
  auto tm = target_machine(options.target, options.opt_level);
  llvm::LLVMContext ctx;
  auto m = build_module(ctx, funcs, *tm, options, with_harness);
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  KILN_CHECK(!ec, "cannot write ", path, ": ", ec.message());
  emit_machine_code(*m, *tm, out, llvm::CodeGenFileType::ObjectFile, options.llvm_pass_times);
}

// Removes a temporary file when it goes out of scope.
struct TempFile {
  std::string path;
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

std::string emit_text(const std::vector<tir::PrimFunc>& funcs, EmitKind kind, const CodegenOptions& options) {
  KILN_CHECK(kind == EmitKind::LLVMIR || kind == EmitKind::Assembly,
             "emit_text writes ll or asm; use emit_to_file for obj, so and exe");
  check_target_imports(funcs, options);
  use_loop_strength_reduction(options.target);
  auto tm = target_machine(options.target, options.opt_level);
  llvm::LLVMContext ctx;
  auto m = build_module(ctx, funcs, *tm, options);
  llvm::SmallString<4096> text;
  llvm::raw_svector_ostream os(text);
  if (kind == EmitKind::LLVMIR) {
    m->print(os, nullptr);
  } else {
    emit_machine_code(*m, *tm, os, llvm::CodeGenFileType::AssemblyFile, options.llvm_pass_times);
  }
  return std::string(text.str());
}

void emit_to_file(const std::vector<tir::PrimFunc>& funcs, EmitKind kind, const std::string& path,
                  const CodegenOptions& options) {
  const Target& target = options.target;
  if (kind == EmitKind::SharedLibrary && target.is_hexagon())
    throw Error("--emit so is for the host target; for " + target.name +
                " emit obj (to link yourself) or exe (a static executable with kiln's Hexagon runtime)");
  if (kind == EmitKind::Executable && !target.is_hexagon())
    throw Error(
        "--emit exe builds a static Hexagon executable; give --target hexagon-v68 (or v66, v69, "
        "v73), or emit so for the host");
  check_target_imports(funcs, options);
  if (kind == EmitKind::LLVMIR || kind == EmitKind::Assembly) {
    CodegenOptions o = options;
    o.check_imports = false;
    std::string text = emit_text(funcs, kind, o);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    KILN_CHECK(f != nullptr, "cannot write ", path);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return;
  }
  if (kind == EmitKind::Object) return write_object(funcs, options, path, false);
  TempFile obj{path + ".o"};
  write_object(funcs, options, obj.path, kind == EmitKind::Executable);
  if (kind == EmitKind::Executable) return link_hexagon_executable(obj.path, path, options.link_libs);
  // A shared library: its undefined symbols stay imports, resolved when the
  // runtime (or the named libraries) load it.
  link_with_lld({"-shared", "-o", path, obj.path}, path);
}

}  // namespace kiln::codegen
