// The model compile pipeline, stage by stage (see compile_model.h).
#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <sstream>

#include "codegen/codegen.h"
#include "driver/build.h"
#include "driver/compile_model.h"
#include "driver/kernels.h"
#include "ir/model_names.h"
#include "ir/text.h"
#include "tir/text.h"
#include "tir/transform/passes.h"
#include "transform/pass.h"

namespace kiln::driver {
namespace {

class StageLog {
 public:
  explicit StageLog(const CompileOptions& o) : o_(o), log_(o.log ? *o.log : std::cerr) {}

  // Runs one stage, timing it; `print` writes its result for --print-after-all.
  template <typename F, typename P>
  auto run(const std::string& name, F&& f, P&& print) {
    auto start = std::chrono::steady_clock::now();
    auto result = f();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (o_.time_passes) log_ << "# stage " << name << ": " << ms << " ms\n";
    if (o_.print_after_all) log_ << "# after " << name << "\n" << print(result) << "\n";
    return result;
  }
  template <typename F>
  auto run(const std::string& name, F&& f) {
    return run(name, std::forward<F>(f), [](const auto&) { return std::string("(not printed)"); });
  }
  std::ostream& log() { return log_; }

 private:
  const CompileOptions& o_;
  std::ostream& log_;
};

std::string print_host_program(const Graph& g) {
  std::ostringstream os;
  os << "host program " << g.name << ":\n";
  for (const auto& n : g.nodes) {
    os << "  " << n.name << " = ";
    if (!n.kernel.empty())
      os << "kernel " << n.kernel;
    else if (!n.callee.empty())
      os << "call @" << n.callee;
    else
      os << n.op << " (reference kernel)";
    os << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i];
    os << ")\n";
  }
  return os.str();
}

std::string print_funcs(const std::vector<tir::PrimFunc>& funcs) {
  std::string s;
  for (const auto& f : funcs) s += print_prim_func(*f) + "\n";
  return s;
}

int count_op_nodes(const Graph& g) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.callee.empty() && node.kernel.empty();
  return n;
}

// The model's names of @main's inputs and outputs (they name @main's only),
// kept for the host inputs that took the parameters' names.
ModelNames host_model_names(const Module& m, const std::string& entry, const Graph& host) {
  if (entry != "main") return {};
  ModelNames names = model_names(m), out;
  out.outputs = names.outputs;
  for (const auto& in : host.inputs) {
    auto it = names.inputs.find(in.name);
    if (it != names.inputs.end()) out.inputs[in.name] = it->second;
  }
  return out;
}

}  // namespace

std::string CompileSummary::str() const {
  std::ostringstream os;
  os << "compiled " << lowered_ops << " of " << host_ops << " host ops into " << kernels << " kernel calls ("
     << distinct_kernels << " distinct); ";
  int left = 0;
  for (const auto& [op, e] : reference_ops) left += e.first;
  os << left << " op" << (left == 1 ? "" : "s") << " on reference kernels";
  if (left) {
    os << " (";
    bool first = true;
    for (const auto& [op, e] : reference_ops) {
      os << (first ? "" : ", ") << op << " x" << e.first << ": " << e.second;
      first = false;
    }
    os << ")";
  }
  if (!cpu.empty()) {
    os << "; for " << cpu << " (";
    for (size_t i = 0; i < cpu_features.size(); ++i) os << (i ? " " : "") << cpu_features[i];
    if (cpu_features.empty()) os << "none of sse4.2 avx avx2 fma avx512f";
    os << ")";
    if (!caches.empty()) os << ", " << caches;
  }
  if (arena_bytes > 0)
    os << "; arena " << (arena_bytes + 1023) / 1024 << " KiB for " << (intermediate_bytes + 1023) / 1024
       << " KiB of intermediates";
  return os.str();
}

Executable compile_model(const Module& input, const CompileOptions& opts, CompileSummary* summary) {
  auto t0 = std::chrono::steady_clock::now();
  StageLog stages(opts);
  CompileSummary local;
  CompileSummary& sum = summary ? *summary : local;

  // 1. Graph optimizations, before partitioning, so backends see folded
  //    batch norms and whole activations.
  PipelineOptions popts;
  popts.print_after_all = opts.print_after_all;
  popts.time_passes = opts.time_passes;
  popts.log = &stages.log();
  // run_passes prints after each pass itself.
  Module m = stages.run("graph-optimizations",
                        [&] { return run_passes(input, graph_optimization_passes(), popts); });

  // 2. Partition: only when backends are named.
  sum.offloaded = !opts.partition.backends.empty();
  if (sum.offloaded)
    m = stages.run(
        "partition", [&] { return partition_module(m, opts.partition, opts.merge, &sum.report); },
        [](const Module& r) { return print_module(r); });

  // 2b. float16 ops on float32 values, each result rounded, so the host
  //     passes below (which take float32) see them; their constants folded.
  const schedule::CpuTarget cpu = codegen::schedule_target(opts.target);
  if (opts.compile_host && cpu.float16_conversions && !cpu.scratchpad_bytes)
    m = stages.run("widen-float16", [&] {
      const std::string widen =
          opts.float16_excess_precision ? "widen-float16{excess_precision=1}" : "widen-float16";
      return run_passes(m, {widen, "fold-constants", "dead-code-elimination"}, popts);
    });
  // 2b'. A quantized model's convs and products on integers, where the CPU
  //      has integer dot products as wide as its float32 vectors: byte dot
  //      products (VNNI: four uint8 x int8 products a lane) or, without
  //      them, vpmaddwd's int16 pairs (AVX2, Skylake-X), the uint8 data
  //      widened to int16 as a conv pads it or a product copies its rows.
  //      Before convert-layout, which blocks float32 convs.
  const int dot = cpu.int8_dot_lanes && cpu.int8_dot_lanes == cpu.float32_lanes()     ? 4
                  : cpu.int16_dot_lanes && cpu.int16_dot_lanes == cpu.float32_lanes() ? 2
                                                                                      : 0;
  //      Convs whose channels fill blocks of the dot's lanes run blocked
  //      (convert-layout{dot=N}), at any stride and map width. With byte
  //      dot products, NCHW ones too on maps at least half a vector wide
  //      (ResNet-18's 14x14 stage with 16 lanes ran 2-6% faster on
  //      integers, its 7x7 one 4.6x slower).
  const bool integer_layout = opts.blocked_layout && dot;
  //      Products of uint8 data by int8 weights (MatMulInteger, as dynamic
  //      quantization writes a transformer's; QDQ's products) packed for
  //      those dot products (pack-matmul-weights{dot=N}). Max pools of
  //      dequantized integers pool the integers on any host (the same
  //      values, a quarter of the bytes).
  if (opts.compile_host && !cpu.scratchpad_bytes)
    m = stages.run("quantize-convs", [&] {
      std::vector<std::string> passes = {"quantized-max-pools", "dead-code-elimination"};
      if (dot == 4 || integer_layout)
        passes.insert(passes.begin(),
                      "quantize-convs{min_columns=" + std::to_string(std::max(1, cpu.int8_dot_lanes / 2)) +
                          (integer_layout ? " block=" + std::to_string(cpu.float32_lanes()) : "") +
                          " dot=" + std::to_string(dot) + "}");
      if (dot) passes.insert(passes.begin(), "quantize-matmuls");
      return run_passes(m, passes, popts);
    });
  // 2c. Host layout: after partitioning (backends keep NCHW convs), before
  //     the host program is built from what is left. Folding packs the
  //     blocked weights; dead-code-elimination drops the unblocked copies
  //     that nothing reads.
  if (opts.compile_host && opts.blocked_layout && !cpu.scratchpad_bytes && cpu.float32_lanes() > 1)
    m = stages.run("convert-layout", [&] {
      return run_passes(m,
                        {"convert-layout{block=" + std::to_string(cpu.float32_lanes()) +
                             (integer_layout ? " dot=" + std::to_string(dot) : "") + "}",
                         "fold-constants", "dead-code-elimination"},
                        popts);
    });
  // 2d. Constant right operands of products packed into the panels their
  //     register tiles read, at compile time.
  if (opts.compile_host && !cpu.scratchpad_bytes && cpu.float32_lanes() > 1)
    m = stages.run("pack-matmul-weights", [&] {
      return run_passes(m,
                        {"pack-matmul-weights{lanes=" + std::to_string(cpu.float32_lanes()) +
                             (dot ? " dot=" + std::to_string(dot) : "") + "}",
                         "fold-constants", "dead-code-elimination"},
                        popts);
    });
  // 2e. Large 3x3 convs by Winograd's F(m, 3) along their rows, their
  //     kernels transformed at compile time.
  if (opts.compile_host && !cpu.scratchpad_bytes && cpu.float32_lanes() > 1)
    m = stages.run("winograd-weights", [&] {
      return run_passes(m, {"winograd-weights", "fold-constants", "dead-code-elimination"}, popts);
    });

  // 3. Backend codegen; the rest becomes the host program.
  Executable exe = stages.run(
      "backend-codegen", [&] { return build_executable(m, opts.entry, opts.codegen, &sum.backend_notes); },
      [](const Executable& r) { return print_host_program(r.host); });
  if (sum.offloaded) exe.offload_summary = sum.report.summary();
  exe.names = host_model_names(input, opts.entry, exe.host);
  sum.host_ops = count_op_nodes(exe.host);
  if (!opts.compile_host) {
    sum.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return exe;
  }

  // 4. Fuse: host ops grouped into kernels.
  KernelPlan plan = stages.run(
      "fuse", [&] { return plan_kernels(exe.host, cpu); },
      [&](const KernelPlan& p) {
        std::string s;
        for (const auto& k : p.kernels) s += k.spec.name + " (" + std::to_string(k.nodes.size()) + " ops)\n";
        return s;
      });
  sum.lowered_ops = plan.lowered_ops;
  sum.reference_ops = plan.reference_ops;
  if (opts.strict_compile && !plan.reference_ops.empty())
    throw Error("--strict-compile: ops would run on reference kernels: " + sum.str() +
                "; drop --strict-compile to run them there");

  // 5. Lower and schedule each kernel.
  LoweredKernels lowered = stages.run(
      "lower-and-schedule", [&] { return lower_planned_kernels(exe.host, plan, cpu); },
      [](const LoweredKernels& r) { return print_host_program(r.host) + print_funcs(r.funcs); });
  sum.distinct_kernels = int(lowered.funcs.size());
  sum.kernels = int(lowered.host.nodes.size()) - count_op_nodes(lowered.host);
  for (const auto& n : lowered.host.nodes) sum.kernels -= !n.callee.empty();

  // 6. Tensor-IR passes, by name, each over every kernel.
  tir::TirPassOptions tir_opts = codegen::tir_pass_options(opts.target);
  tir_opts.check_bounds = opts.check_bounds;
  std::vector<tir::PrimFunc> funcs = lowered.funcs;
  for (const std::string& pass : tir::tir_build_passes())
    funcs = stages.run(
        "tir:" + pass,
        [&] {
          std::vector<tir::PrimFunc> out;
          for (const auto& f : funcs) out.push_back(tir::run_tir_pass(pass, f, tir_opts));
          return out;
        },
        [](const std::vector<tir::PrimFunc>& r) { return print_funcs(r); });

  // 7. LLVM: one shared object for the host CPU.
  if (!funcs.empty()) {
    codegen::CodegenOptions cg;
    cg.target = opts.target;
    std::string llvm_pass_times;
    if (opts.time_passes) cg.llvm_pass_times = &llvm_pass_times;
    codegen::HostObject obj = stages.run("llvm", [&] { return codegen::emit_host_shared_object(funcs, cg); });
    if (opts.time_passes)
      stages.log() << "# LLVM's IR passes and analyses, then its machine-code passes, for the host code "
                      "(compiled in one part):\n"
                   << llvm_pass_times;
    exe.host_code.cpu = obj.cpu;
    exe.host_code.cpu_features = obj.cpu_features;
    exe.host_code.imports = obj.imports;
    exe.host_code.shared_object = std::move(obj.bytes);
    exe.host_code.kernels = std::move(lowered.kernels);
    sum.cpu = exe.host_code.cpu;
    sum.cpu_features = exe.host_code.cpu_features;
    if (!cpu.scratchpad_bytes) sum.caches = schedule::describe_caches(cpu);
  }

  // 8. The artifact: the host program now calls the kernels, its
  //    intermediate values in one arena.
  exe.host = std::move(lowered.host);
  exe.memory = stages.run(
      "plan-memory", [&] { return plan_memory(exe.host); },
      [](const MemoryPlan& p) {
        return "arena " + std::to_string(p.arena_bytes) + " bytes for " + std::to_string(p.offsets.size()) +
               " values of " + std::to_string(p.intermediate_bytes) + " bytes";
      });
  sum.arena_bytes = exe.memory.arena_bytes;
  sum.intermediate_bytes = exe.memory.intermediate_bytes;
  sum.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return exe;
}

}  // namespace kiln::driver
