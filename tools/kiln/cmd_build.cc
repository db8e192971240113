// kiln build FILE.kir --target llvm --emit ll|asm|obj|so -o OUT [--link-lib LIB ...]
// kiln build FILE.kir --target hexagon-v66|v68|v69|v73 --emit ll|asm|obj|exe -o OUT
//            [--vtcm-capacity BYTES] [--static-scratchpad-plan] [--print-tir]
//
// Compiles the prim functions of FILE for the host or a Hexagon version: the
// tensor-IR build pipeline (capacity check against the target's VTCM,
// scratchpad lowering, flattening, simplification), LLVM codegen, and the
// link check of every import against the runtime ABI and the named
// libraries. For Hexagon, exe links a static executable with a generated
// harness and kiln's Hexagon runtime (run it with `kiln run --target`).
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "codegen/codegen.h"
#include "commands.h"
#include "ir/text.h"
#include "runtime/file_io.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::cli {
namespace {

struct BuildOpts {
  std::string input;
  std::string target = "llvm";
  std::string emit = "obj";
  std::string output;
  std::vector<std::string> link_libs;
  std::optional<uint64_t> vtcm_capacity;  // default: the target's
  bool print_tir = false;
  bool static_scratchpad_plan = false;
  bool check_bounds = false;
};

std::vector<tir::PrimFunc> read_prim_functions(const std::string& path) {
  std::string text = read_input(path, "module");
  // A module may hold graph functions too; `build` compiles its prim functions.
  Module m = parse_module(text, path);
  KILN_CHECK(!m.prim_functions.empty(), path, " has no prim functions to build");
  return std::vector<tir::PrimFunc>(m.prim_functions.begin(), m.prim_functions.end());
}

// Text (ll, asm) is made in memory; binaries are made in a scratch folder
// (the linker writes files) and copied. Either way the output is written by
// write_file, atomically, and "-" is standard output.
void emit(const std::vector<tir::PrimFunc>& funcs, codegen::EmitKind kind, const std::string& out,
          const codegen::CodegenOptions& cg) {
  if (kind == codegen::EmitKind::LLVMIR || kind == codegen::EmitKind::Assembly)
    return write_output(out, codegen::emit_text(funcs, kind, cg));
  std::error_code ec;
  std::filesystem::path scratch = std::filesystem::temp_directory_path(ec);
  if (ec) scratch = ".";
  char name[] = "kiln-build-XXXXXX";
  std::string dir = (scratch / name).string();
  if (!::mkdtemp(dir.data())) throw Error("cannot create a scratch folder in " + scratch.string());
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } remove{dir};
  std::string made = dir + "/out";
  codegen::emit_to_file(funcs, kind, made, cg);
  std::string bytes = read_file(made);
  if (out == "-") return write_output(out, bytes);
  write_file(out, bytes, kind != codegen::EmitKind::Object);
}

int run_build(const BuildOpts& o) {
  codegen::Target target = codegen::parse_target(o.target);
  if (o.vtcm_capacity) target.vtcm_capacity = *o.vtcm_capacity;
  codegen::EmitKind kind = codegen::parse_emit_kind(o.emit);
  tir::TirPassOptions pass_options = codegen::tir_pass_options(target);
  pass_options.static_scratchpad_plan = o.static_scratchpad_plan;
  pass_options.check_bounds = o.check_bounds;
  // kiln's Hexagon runtime runs a parallel loop as one task; the host's
  // thread pool runs its tasks at once.
  if (target.is_hexagon()) pass_options.parallel_tasks = 1;
  auto funcs = read_prim_functions(o.input);
  for (auto& f : funcs) {
    f = tir::lower_for_build(f, pass_options);
    if (o.print_tir) std::cout << tir::print_prim_func(*f);
  }
  codegen::CodegenOptions cg;
  cg.target = target;
  cg.link_libs = o.link_libs;
  emit(funcs, kind, o.output, cg);
  return 0;
}

}  // namespace

void add_build_command(CLI::App& app) {
  auto opts = std::make_shared<BuildOpts>();
  CLI::App* cmd =
      app.add_subcommand("build", "compile prim functions for the host or Hexagon with checked linking");
  cmd->add_option("file", opts->input, "a .kir file of prim functions (- reads it from standard input)")
      ->required();
  cmd->add_option("--target", opts->target, "llvm (the host CPU) or hexagon-v66|v68|v69|v73 (HVX 128 B)");
  cmd->add_option("--emit", opts->emit, "ll, asm, obj, so (host) or exe (Hexagon static executable)");
  cmd->add_option("-o,--output,--out", opts->output, "output file (- for standard output)")->required();
  cmd->add_option("--link-lib", opts->link_libs,
                  "a library that may provide imports: a shared library (host) or an object file (Hexagon)");
  cmd->add_option("--vtcm-capacity", opts->vtcm_capacity,
                  "scratchpad capacity in bytes (default: the target's; 4 MiB for the host)");
  cmd->add_flag("--print-tir", opts->print_tir, "print the lowered tensor IR");
  cmd->add_flag("--check-bounds", opts->check_bounds,
                "Check indices and integer divisors at run time (a fault is an error naming kernel, "
                "buffer, index and extent)");
  cmd->add_flag("--static-scratchpad-plan", opts->static_scratchpad_plan,
                "one VTCM allocation per function, buffers at liveness-based offsets");
  cmd->callback([opts] {
    int rc = run_build(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace kiln::cli
