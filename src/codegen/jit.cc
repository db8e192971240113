// JitModule: prim functions compiled in process with LLVM's ORC JIT, every
// import resolved and checked before any code runs.
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>
#include <unordered_map>

#include "codegen/codegen.h"
#include "codegen/llvm_internal.h"
#include "kiln/runtime/backend_api.h"

namespace kiln::codegen {

// ---------------------------------------------------------------- JIT

struct JitModule::Impl {
  using Entry = int32_t (*)(void**);
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<Import> imports;
  // Each packed entry's address after its first call: an ORC lookup takes
  // microseconds (a session lock, a symbol search), as long as a small
  // kernel runs, and benchmarks call the same function thousands of times.
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;

  Entry entry(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = entries.find(name); it != entries.end()) return it->second;
    auto addr = jit->lookup(name + "__packed");
    if (!addr) {
      llvm::consumeError(addr.takeError());
      throw Error("the module has no prim function @" + name);
    }
    return entries[name] = addr->toPtr<Entry>();
  }
};

JitModule::JitModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitModule::~JitModule() = default;

std::unique_ptr<JitModule> JitModule::create(const std::vector<tir::PrimFunc>& funcs,
                                             const CodegenOptions& options) {
  if (options.target.is_hexagon())
    throw Error("the JIT runs host code only; " + options.target.name +
                " code runs under qemu-hexagon-static (kiln run --target " + options.target.name + ")");
  auto impl = std::make_unique<Impl>();
  impl->imports = collect_imports(funcs);
  if (options.check_imports) check_imports(impl->imports, options.link_libs, "build");
  // Load time: every import must resolve before any code runs, whatever the
  // build did. Only resolved symbols are given to the JIT, so nothing can bind
  // to a same-named symbol of the host process by accident.
  std::vector<ResolvedImport> resolved = resolve_imports(impl->imports, options.link_libs);
  check_imports(impl->imports, options.link_libs, "load");

  use_loop_strength_reduction(options.target);
  auto tm = target_machine(options.target, options.opt_level);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = build_module(*ctx, funcs, *tm, options);

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) throw Error("cannot set up the JIT: " + llvm_error(jtmb.takeError()));
  // The machine code as a .kmod's: the same CPU, features, options (FMA
  // contraction: without it a multiply-add is two instructions and a
  // product's inner loop runs at half speed) and optimization level.
  jtmb->setCPU(tm->getTargetCPU().str());
  jtmb->getFeatures() = llvm::SubtargetFeatures(tm->getTargetFeatureString());
  jtmb->setOptions(tm->Options);
  jtmb->setCodeGenOptLevel(tm->getOptLevel());
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) throw Error("cannot create the JIT: " + llvm_error(jit.takeError()));
  llvm::orc::SymbolMap symbols;
  for (const ResolvedImport& r : resolved)
    symbols[(*jit)->mangleAndIntern(r.import.symbol)] = {llvm::orc::ExecutorAddr::fromPtr(r.address),
                                                         llvm::JITSymbolFlags::Exported};
  if (auto err = (*jit)->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))))
    throw Error("cannot define runtime symbols in the JIT: " + llvm_error(std::move(err)));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw Error("cannot add the module to the JIT: " + llvm_error(std::move(err)));
  impl->jit = std::move(*jit);
  return std::unique_ptr<JitModule>(new JitModule(std::move(impl)));
}

int32_t JitModule::call(const std::string& name, const std::vector<void*>& args) {
  Impl::Entry fn = impl_->entry(name);
  std::vector<void*> a = args;
  return fn(a.data());
}

void JitModule::run(const std::string& name, const std::vector<void*>& args) {
  KilnBackendSetLastError("");
  int32_t code = call(name, args);
  if (code != 0)
    throw Error("@" + name + " failed (code " + std::to_string(code) + "): " + KilnBackendGetLastError());
}

const std::vector<Import>& JitModule::imports() const { return impl_->imports; }

}  // namespace kiln::codegen
