// LLVM itself for kiln's codegen: the targets registered once, the target
// machine of a kiln target, the optimisation pipelines, the diagnostics
// LLVM reports while compiling, and machine code output. Building the IR of
// prim functions is llvm_codegen.cc.
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassTimingInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>
#include <string>

#include "codegen/llvm_internal.h"
#include "kiln/runtime/error.h"

namespace kiln::codegen {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    LLVMInitializeHexagonTargetInfo();
    LLVMInitializeHexagonTarget();
    LLVMInitializeHexagonTargetMC();
    LLVMInitializeHexagonAsmPrinter();
    set_llvm_options();
  });
}

void set_llvm_options() {
  auto& options = llvm::cl::getRegisteredOptions();
  // HVX code from LLVM's loop and SLP vectorizers: off by default in the
  // Hexagon backend, which is why it is switched on here for every Hexagon
  // target machine (the host ignores it).
  auto set = [&](const char* name, const char* value) {
    if (auto it = options.find(name); it != options.end() && it->second->getNumOccurrences() == 0)
      it->second->addOccurrence(0, name, value);
  };
  set("hexagon-autohvx", "true");
  // No small-data section: constants and globals addressed relative to GP
  // need a GP set up by startup code and relocations ld.lld does not take
  // (clang's -G0 for the runtime, the same here for the kernels).
  set("hexagon-small-data-threshold", "0");
}

void use_loop_strength_reduction(const Target& t) {
  // Host code goes without LLVM's loop strength reduction (its
  // -disable-lsr): it took 10-25% of a model's compile (one Zen 5 core:
  // PP-OCR det 987 -> 779 ms, rec 758 -> 651, EfficientNet-B0 921 -> 852,
  // BERT 194 -> 151) for no speed with AVX-512 (every model the same within
  // noise, interleaved runs; the 1024^3 matmul the same), once
  // conv2d_transpose's tile left room for its operands (nn.cc). x86-64-v3
  // (AVX2, 16 registers) code runs 1-1.5% slower without it (det 10.0-10.1
  // -> 10.1-10.3 ms, rec 14.8 -> 15.0; Winograd's kernels 3.5%) and
  // compiles 15-20% faster (det 785 -> 632 ms): the compile is the tighter
  // of the two against its target. Hexagon keeps it: its loops step through
  // HVX vectors with post-incremented addresses. The option is
  // process-wide, so each codegen entry point sets it before compiling.
  auto& options = llvm::cl::getRegisteredOptions();
  auto it = options.find("disable-lsr");
  if (it == options.end()) return;
  it->second->reset();
  if (!t.is_hexagon()) it->second->addOccurrence(0, "disable-lsr", "true");
}

namespace {

llvm::CodeGenOptLevel codegen_level(int opt_level) {
  return opt_level >= 3   ? llvm::CodeGenOptLevel::Aggressive
         : opt_level == 0 ? llvm::CodeGenOptLevel::None
                          : llvm::CodeGenOptLevel::Default;
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> target_machine(const Target& t, int opt_level) {
  init_llvm();
  std::string triple = t.is_hexagon() ? t.triple : llvm::sys::getProcessTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw Error("LLVM has no target for " + t.name + " (" + triple + "): " + err);
  llvm::TargetOptions options;
  if (t.is_hexagon()) {
    // Static executables for the Hexagon runtime; no PIC needed.
    return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
        triple, t.cpu, t.features, options, llvm::Reloc::Static, std::nullopt, codegen_level(opt_level)));
  }
  // a * b + c becomes one fused multiply-add where the CPU has one: one
  // rounding instead of two (closer to the exact result, not further) and
  // twice the arithmetic per cycle in conv and matmul inner loops.
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  // The machine's CPU and features, or a named CPU (-mcpu) with its own.
  std::string cpu = t.cpu, features = t.features;
  if (cpu.empty()) {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto& f : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
  }
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt, codegen_level(opt_level)));
}

namespace {

// The host's code reaches LLVM as vector code already (vectorize-loops,
// unroll-loops, promote-accumulators, share-common-subexpressions): what is
// left is to turn the register tiles' local buffers into registers, fold and
// clean up, hoist what does not change in a loop, vectorize the loops
// vectorize-loops left with their hint, and pack the scalar remainders (SLP:
// without it PP-OCR rec runs 13% slower). LLVM's O2 pipeline on top of that
// (eight rounds of instcombine, loop unrolling, indvars, ...) doubles the
// compile time and adds no speed: on one core of a Xeon PP-OCR det compiles
// in 1.2 s instead of 2.4 s, rec 16.1 ms with either. Hexagon keeps O2's.
// instcombine without its fixpoint check: LLVM's own pipelines run it so,
// and a check that fails is a fatal error, not a slower build.
constexpr const char* kHostPipeline =
    "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),"
    "loop(loop-rotate),loop-vectorize<vectorize-forced-only>,gvn,instcombine<no-verify-fixpoint>,"
    "slp-vectorizer,dse,instcombine<no-verify-fixpoint>,simplifycfg)";
constexpr const char* kHostPipelineNoLoopVectorize =
    "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),gvn,"
    "instcombine<no-verify-fixpoint>,slp-vectorizer,dse,instcombine<no-verify-fixpoint>,simplifycfg)";

}  // namespace

namespace {

// LLVM's pass timers on (its -time-passes) while alive when `out` is set;
// report() appends the legacy pass manager's report (machine code) to it.
class PassTimes {
 public:
  explicit PassTimes(std::string* out) : out_(out) {
    if (out_) llvm::TimePassesIsEnabled = true;
  }
  void report() {
    if (!out_) return;
    llvm::raw_string_ostream os(*out_);
    llvm::reportAndResetTimings(&os);
  }
  ~PassTimes() {
    if (out_) llvm::TimePassesIsEnabled = false;
  }

 private:
  std::string* out_;
};

void run_pipeline(llvm::Module& m, llvm::TargetMachine& tm, int opt_level, bool loop_vectorize,
                  llvm::PassInstrumentationCallbacks* callbacks) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = loop_vectorize;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto, std::nullopt, callbacks);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  if (opt_level == 2 && tm.getTargetTriple().getArch() != llvm::Triple::hexagon) {
    llvm::ModulePassManager mpm;
    if (llvm::Error e =
            pb.parsePassPipeline(mpm, loop_vectorize ? kHostPipeline : kHostPipelineNoLoopVectorize))
      throw Error("internal error: the host's LLVM pass pipeline does not parse: " +
                  llvm::toString(std::move(e)));
    mpm.run(m, mam);
    return;
  }
  auto level = opt_level >= 3   ? llvm::OptimizationLevel::O3
               : opt_level == 2 ? llvm::OptimizationLevel::O2
                                : llvm::OptimizationLevel::O1;
  pb.buildPerModuleDefaultPipeline(level).run(m, mam);
}

}  // namespace

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level, bool loop_vectorize,
              std::string* pass_times) {
  if (opt_level <= 0) return;
  if (!pass_times) return run_pipeline(m, tm, opt_level, loop_vectorize, nullptr);
  PassTimes times(pass_times);
  std::string report;
  {
    llvm::raw_string_ostream os(report);
    llvm::PassInstrumentationCallbacks callbacks;
    llvm::StandardInstrumentations instrumentations(m.getContext(), false);
    instrumentations.getTimePasses().setOutStream(os);
    instrumentations.registerCallbacks(callbacks);
    run_pipeline(m, tm, opt_level, loop_vectorize, &callbacks);
  }  // destroyed, the instrumentations write the IR passes' and analyses' times
  *pass_times += report;
}

namespace {

// `vectorized` and `unrolled` loops are requests, not guarantees: when LLVM
// cannot honour one (a float loop on Hexagon, where kiln enables no HVX
// floating point) the loop stays scalar and correct. LLVM's "loop not
// vectorized" warnings about that are dropped; errors are collected and
// thrown by throw_llvm_errors.
thread_local std::string t_llvm_errors;

void throw_llvm_errors() {
  if (!t_llvm_errors.empty()) throw Error("LLVM reported errors while compiling:" + t_llvm_errors);
}

}  // namespace

void quiet_optimization_failures(llvm::LLVMContext& ctx) {
  t_llvm_errors.clear();
  ctx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* d, void*) {
        if (d->getSeverity() != llvm::DS_Error) return;
        llvm::raw_string_ostream os(t_llvm_errors);
        llvm::DiagnosticPrinterRawOStream printer(os);
        os << "\n  ";
        d->print(printer);
      },
      nullptr);
}

std::string llvm_error(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

// Machine code for the host into `out` (assembly or object).
void emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, llvm::raw_pwrite_stream& out,
                       llvm::CodeGenFileType type, std::string* pass_times) {
  PassTimes times(pass_times);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out, nullptr, type))
    throw Error("LLVM cannot emit this file type for the host target");
  pm.run(m);
  times.report();
  throw_llvm_errors();
}

}  // namespace kiln::codegen
