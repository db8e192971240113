// The host half of a compiled model: its kernels as one shared object
// (emit_host_shared_object), compiled in parallel parts and linked with
// ld.lld (in process), and the host CPU as LLVM sees it.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "codegen/codegen.h"
#include "codegen/lld.h"
#include "codegen/llvm_internal.h"
#include "runtime/host_code.h"
#include "runtime/runtime_abi.h"
#include "runtime/thread_pool.h"

namespace kiln::codegen {

// Calls of runtime-ABI functions go through an exported pointer
// `kiln_import_<symbol>` that the loader fills (runtime/host_code.h), so the
// shared object has no undefined runtime symbols. Returns the symbols.
std::vector<std::string> use_import_slots(llvm::Module& m) {
  std::vector<std::string> imports;
  std::vector<llvm::Function*> decls;
  for (llvm::Function& f : m)
    if (f.isDeclaration() && !f.isIntrinsic() && find_runtime_symbol(f.getName().str())) decls.push_back(&f);
  llvm::IRBuilder<> b(m.getContext());
  for (llvm::Function* f : decls) {
    std::string name = f->getName().str();
    imports.push_back(name);
    // Weak: the parts of a model compiled in parallel each define the slots
    // they use, and the linker keeps one of each.
    auto* slot =
        new llvm::GlobalVariable(m, b.getPtrTy(), false, llvm::GlobalValue::WeakAnyLinkage,
                                 llvm::ConstantPointerNull::get(b.getPtrTy()), "kiln_import_" + name);
    std::vector<llvm::CallInst*> calls;
    for (llvm::User* u : f->users())
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(u)) calls.push_back(call);
    for (llvm::CallInst* call : calls) {
      b.SetInsertPoint(call);
      call->setCalledOperand(b.CreateLoad(b.getPtrTy(), slot, name + ".slot"));
    }
    KILN_CHECK(f->use_empty(), "codegen: runtime function ", name, " is used other than by a call");
    f->eraseFromParent();
  }
  std::sort(imports.begin(), imports.end());
  return imports;
}

HostObject emit_host_shared_object(const std::vector<tir::PrimFunc>& funcs, const CodegenOptions& options) {
  KILN_CHECK(!options.target.is_hexagon(), "host code is for the host target, not ", options.target.name);
  check_target_imports(funcs, options);
  HostObject out;
  char dir_template[] = "/tmp/kiln-host-XXXXXX";
  KILN_CHECK(mkdtemp(dir_template) != nullptr, "cannot create a temporary folder for the host code");
  const std::string dir = dir_template;
  // The functions are compiled in parts, one thread each (LLVM's contexts
  // and target machines are per thread), and linked into one object.
  size_t parts = std::max<size_t>(1, std::min<size_t>(size_t(available_cpus()), funcs.size() / 4));
  if (options.llvm_pass_times) parts = 1;
  std::vector<std::vector<tir::PrimFunc>> chunks(parts);
  for (size_t i = 0; i < funcs.size(); ++i) chunks[i % parts].push_back(funcs[i]);
  std::vector<std::string> objects(parts);
  std::vector<std::vector<std::string>> imports(parts);
  std::vector<std::exception_ptr> errors(parts);
  std::string cpu;
  auto compile_part = [&](size_t p) {
    try {
      auto tm = target_machine(options.target, options.opt_level);
      llvm::LLVMContext ctx;
      auto m = build_module(ctx, chunks[p], *tm, options, false, &imports[p]);
      objects[p] = dir + "/kernels" + std::to_string(p) + ".o";
      std::error_code ec;
      llvm::raw_fd_ostream os(objects[p], ec, llvm::sys::fs::OF_None);
      KILN_CHECK(!ec, "cannot write ", objects[p], ": ", ec.message());
      emit_machine_code(*m, *tm, os, llvm::CodeGenFileType::ObjectFile, options.llvm_pass_times);
      if (p == 0) cpu = tm->getTargetCPU().str();
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  use_loop_strength_reduction(options.target);
  std::vector<std::thread> threads;
  for (size_t p = 1; p < parts; ++p) threads.emplace_back(compile_part, p);
  compile_part(0);
  for (auto& t : threads) t.join();
  const std::string so = dir + "/kernels.so";
  auto cleanup = [&] {
    for (const auto& o : objects)
      if (!o.empty()) std::remove(o.c_str());
    std::remove(so.c_str());
    rmdir(dir.c_str());
  };
  for (const auto& e : errors)
    if (e) {
      cleanup();
      std::rethrow_exception(e);
    }
  std::vector<std::string> args = {"-shared", "-o", so};
  args.insert(args.end(), objects.begin(), objects.end());
  try {
    link_with_lld(args, "the host code");
  } catch (...) {
    cleanup();
    throw;
  }
  {
    std::ifstream in(so, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out.bytes = ss.str();
  }
  cleanup();
  for (const auto& part : imports) out.imports.insert(out.imports.end(), part.begin(), part.end());
  std::sort(out.imports.begin(), out.imports.end());
  out.imports.erase(std::unique(out.imports.begin(), out.imports.end()), out.imports.end());
  out.cpu = cpu;
  out.cpu_features = target_cpu_features(options.target);
  return out;
}

std::vector<std::string> target_cpu_features(const Target& t) {
  std::vector<std::string> out;
  if (t.cpu.empty()) {
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    for (const std::string& f : recorded_cpu_features())
      if (auto it = host.find(f); it != host.end() && it->second) out.push_back(f);
    return out;
  }
  init_llvm();
  const std::string triple = llvm::sys::getProcessTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  KILN_CHECK(target, "LLVM has no target for ", triple, ": ", err);
  // The name is checked on a generic subtarget first (LLVM warns on stderr
  // when it is asked for a subtarget of a CPU it does not know).
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target->createMCSubtargetInfo(triple, "", ""));
  std::unique_ptr<llvm::MCSubtargetInfo> sti;
  if (generic && generic->isCPUStringValid(t.cpu))
    sti.reset(target->createMCSubtargetInfo(triple, t.cpu, t.features));
  if (!sti)
    throw Error("--target '" + t.name + "': LLVM does not know the CPU '" + t.cpu +
                "' (x86-64 names: x86-64, x86-64-v2, x86-64-v3, x86-64-v4, haswell, skylake-avx512, "
                "icelake-server, znver2, znver3, znver4, ...)");
  for (const std::string& f : recorded_cpu_features())
    if (sti->checkFeatures("+" + f)) out.push_back(f);
  return out;
}

std::string target_cpu_name(const Target& t) {
  return t.cpu.empty() ? llvm::sys::getHostCPUName().str() : t.cpu;
}

std::string host_cpu_summary() {
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::string s = llvm::sys::getHostCPUName().str() + ":";
  for (const std::string& f : recorded_cpu_features())
    if (auto it = host.find(f); it != host.end() && it->second) s += " " + f;
  if (!host.lookup("avx512f")) s += " (no avx512f)";
  return s;
}

}  // namespace kiln::codegen
