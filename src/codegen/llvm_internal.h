// What the LLVM codegen's files share (src/codegen only; includes LLVM).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace kiln::codegen {

// Registers LLVM's native and Hexagon targets, once.
void init_llvm();
// A target machine for `t` (the host: this CPU and its features).
std::unique_ptr<llvm::TargetMachine> target_machine(const Target& t, int opt_level);
// The LLVM module of `funcs`, verified and optimized. With `import_slots`,
// runtime-ABI calls go through exported slots (runtime/host_code.h), whose
// symbols are returned there.
std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, const std::vector<tir::PrimFunc>& funcs,
                                           llvm::TargetMachine& tm, const CodegenOptions& options,
                                           bool with_harness = false,
                                           std::vector<std::string>* import_slots = nullptr);
// Calls of runtime-ABI functions through exported pointers
// `kiln_import_<symbol>` the loader fills (host_object.cc); the symbols.
std::vector<std::string> use_import_slots(llvm::Module& m);
// Machine code for `m` into `out` (assembly or object).
void emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, llvm::raw_pwrite_stream& out,
                       llvm::CodeGenFileType type);
std::string llvm_error(llvm::Error e);
// The link check before codegen, by target.
void check_target_imports(const std::vector<tir::PrimFunc>& funcs, const CodegenOptions& options);

}  // namespace kiln::codegen
