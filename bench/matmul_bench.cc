// float32 matmul 1024 x 1024 x 1024 against oneDNN's sgemm in the same run
// (the machines are noisy; compare the ratios), on one thread and on all of
// the machine's threads against oneDNN on as many: the matmul op compiled as
// a model (what `kiln compile` makes of it, run by the VM), its kernel
// JIT-compiled, and a kernel written and scheduled by hand with the
// tensor-expression API.
//
//   make bench
//
// oneDNN here runs on OpenMP (libgomp), whose thread count is fixed when the
// library loads unless omp_set_num_threads changes it; the bench calls that
// (found at run time, so the bench does not link OpenMP itself) before each
// measurement, and kiln's own pool is sized with set_parallel_num_threads.
//
//   kiln_bench_matmul --cpu x86-64-v3
//
// compiles kiln's code for the named CPU instead of this machine's, and
// limits oneDNN to AVX2 when that CPU has no AVX-512: on an AVX-512 machine
// this measures the code an AVX2-only machine gets against the oneDNN such
// a machine runs (same cores, so not a substitute for running there).
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "codegen/codegen.h"
#include "codegen/target.h"
#include "driver/compile_model.h"
#include "ir/text.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
#include "runtime/vm.h"
#include "tir/te/te.h"
#include "tir/transform/passes.h"

using namespace kiln;
using kiln::bench::best_seconds;
using kiln::bench::set_dnnl_threads;
namespace te = kiln::tir::te;

namespace {

constexpr int64_t kN = 1024;

// With `parallel`, the 64-column panels (16 of them) are split between the
// threads; each task packs its own panel of B.
tir::PrimFunc scheduled_matmul(bool parallel) {
  te::Tensor A = te::placeholder({kN, kN}, tir::DataType::float32(), "A");
  te::Tensor B = te::placeholder({kN, kN}, tir::DataType::float32(), "B");
  te::IterVar k = te::reduce_axis(kN, "k");
  te::Tensor C = te::compute(
      {kN, kN},
      [&](const te::Axes& i) -> te::Reduction {
        return te::sum(tir::mul((*A)({i[0], k.var}), (*B)({k.var, i[1]})), {k});
      },
      "C");
  te::Schedule s({C});
  // Register tiling: each 4 x 64 tile of C (four rows of four AVX-512
  // vectors: 16 of the 32 zmm registers) is accumulated in a "local" buffer
  // computed at the tile loop. With its row loop unrolled and its column loop
  // vectorized every access has a constant offset, so LLVM keeps the whole
  // tile in registers across k: per k, 4 loads of B, 4 broadcasts of A and
  // 16 multiply-adds.
  te::Tensor C_tile = s.cache_write(C, "local");
  // B is packed once per 64-column block (1024 x 64 floats, 256 KiB, stays
  // in L2) and read contiguously by all 256 row tiles; read in place, its rows
  // are 4 KiB apart and map to few cache sets. With the packed panel in L2, k
  // needs no further blocking.
  te::Tensor B_panel = s.cache_read(B, "global", {C_tile});
  te::Stage& c = s[C];
  auto [io, ii] = c.split(c.leaf(0), 4);
  auto [jo, ji] = c.split(c.leaf(2), 64);
  c.reorder({jo, io, ii, ji});
  c.unroll(ii);
  c.vectorize(ji);
  if (parallel) c.parallel(jo);
  te::Stage& tile = s[C_tile];
  tile.compute_at(c, io);
  tile.reorder({k.var, tile.leaf(0), tile.leaf(1)});
  tile.unroll(tile.leaf(1));
  tile.vectorize(tile.leaf(2));
  te::Stage& panel = s[B_panel];
  panel.compute_at(c, jo);
  panel.vectorize(panel.leaf(1));
  return te::lower(s, {A, B, C}, parallel ? "matmul_parallel" : "matmul");
}

struct Ratio {
  double kiln_seconds, dnnl_seconds;
};

struct Matrices {
  bench::Floats a, b, c_kiln, c_dnnl;
  Matrices() : a(size_t(kN * kN)), b(size_t(kN * kN)), c_kiln(size_t(kN * kN)), c_dnnl(size_t(kN * kN)) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = float(int(i % 17) - 8) * 0.125f;
      b[i] = float(int(i % 13) - 6) * 0.25f;
    }
  }
};

// Checks kiln's `name` against oneDNN on `threads` threads, then times both:
// `warm_up` untimed runs of each (after a change of thread count oneDNN's
// first calls are slower), then three rounds of `reps` runs of each,
// interleaved so that both see the same machine load; the best run counts.
// With several threads, OpenMP's idle threads keep spinning for a few
// milliseconds after each oneDNN call and slow down the kiln runs right
// after it, so the rounds there are longer (the same for both sides).
// `fetch`, when given, copies kiln's last result into m.c_kiln for the
// check (outside the timed runs).
Ratio compare(const std::function<void(Matrices&)>& kiln_matmul, int threads, Matrices& m, int warm_up,
              int reps, const std::function<void(Matrices&)>& fetch = nullptr) {
  set_parallel_num_threads(threads);
  set_dnnl_threads(threads);
  auto run_kiln = [&] { kiln_matmul(m); };
  auto run_dnnl = [&] {
    dnnl_status_t st =
        dnnl_sgemm('N', 'N', kN, kN, kN, 1.0f, m.a.data(), kN, m.b.data(), kN, 0.0f, m.c_dnnl.data(), kN);
    if (st != dnnl_success) throw Error("dnnl_sgemm failed with status " + std::to_string(int(st)));
  };
  for (int i = 0; i < warm_up; ++i) {
    run_kiln();
    run_dnnl();
  }
  if (fetch) fetch(m);
  double max_err = 0;
  for (size_t i = 0; i < m.c_kiln.size(); ++i)
    max_err = std::max(max_err, double(std::fabs(m.c_kiln[i] - m.c_dnnl[i])));
  std::printf("max |kiln - oneDNN| = %g\n", max_err);
  if (max_err > 1e-2) throw Error("kiln and oneDNN differ");
  Ratio r{1e30, 1e30};
  for (int round = 0; round < 3; ++round) {
    r.kiln_seconds = std::min(r.kiln_seconds, best_seconds(run_kiln, reps));
    r.dnnl_seconds = std::min(r.dnnl_seconds, best_seconds(run_dnnl, reps));
  }
  return r;
}

void print(const char* title, const Ratio& r) {
  const double flops = 2.0 * double(kN) * double(kN) * double(kN);
  std::printf("matmul float32 %lldx%lldx%lld, %s\n", (long long)kN, (long long)kN, (long long)kN, title);
  std::printf("  kiln   %8.2f ms  %7.1f GFLOP/s\n", r.kiln_seconds * 1e3, flops / r.kiln_seconds * 1e-9);
  std::printf("  oneDNN %8.2f ms  %7.1f GFLOP/s\n", r.dnnl_seconds * 1e3, flops / r.dnnl_seconds * 1e-9);
  std::printf("  kiln / oneDNN speed ratio: %.3f\n", r.dnnl_seconds / r.kiln_seconds);
}

}  // namespace

// The matmul op as a compiled model gets it: its tensor-expression definition
// (src/lower/nn.cc) with the default schedule chosen for this CPU
// (src/schedule/), no hand tuning.
tir::PrimFunc default_matmul(const codegen::Target& target) {
  TensorDesc a{{kN, kN}, DType::Float32};
  return bench::lowered_op("matmul", {}, {a, a}, a, "matmul_default", target);
}

// The matmul op compiled as a model is: kiln compile's pipeline, the host
// code in a shared object as in a .kmod, run by the VM (which allocates
// the output each run, as a model run does).
VirtualMachine compiled_model(const codegen::Target& target) {
  const std::string n = std::to_string(kN);
  const std::string t = "Tensor[(" + n + ", " + n + "), float32]";
  Module m = parse_module(
      "def @main(%a: " + t + ", %b: " + t + ") -> " + t + " {\n  %y = matmul(%a, %b)\n  return %y\n}\n",
      "matmul.kir");
  driver::CompileOptions options;
  options.target = target;
  return VirtualMachine(driver::compile_model(m, options));
}

int main(int argc, char** argv) try {
  kiln::bench::keep_heap_memory();
  const codegen::Target target = bench::bench_target(argc, argv, "kiln_bench_matmul");
  const bool named_cpu = !target.cpu.empty();
  // The pass options of a build for the target (its vector width).
  const tir::TirPassOptions options = codegen::tir_pass_options(target);
  codegen::CodegenOptions codegen_options;
  codegen_options.target = target;
  std::vector<tir::PrimFunc> funcs = {tir::lower_for_build(default_matmul(target), options)};
  if (!named_cpu) {
    funcs.push_back(tir::lower_for_build(scheduled_matmul(false), options));
    funcs.push_back(tir::lower_for_build(scheduled_matmul(true), options));
  }
  auto jit = codegen::JitModule::create(funcs, codegen_options);
  std::printf("CPU: %s\n", codegen::host_cpu_summary().c_str());
  bench::print_named_cpu(target);
  Matrices m;
  const int threads = available_cpus();
  auto jit_call = [&](const std::string& name) {
    return [&jit, name](Matrices& mm) { jit->run(name, {mm.a.data(), mm.b.data(), mm.c_kiln.data()}); };
  };
  VirtualMachine vm = compiled_model(target);
  const std::vector<Tensor> inputs = {Tensor::wrap(m.a.data(), {kN, kN}, DType::Float32),
                                      Tensor::wrap(m.b.data(), {kN, kN}, DType::Float32)};
  Tensor y;
  auto model_call = [&](Matrices&) { y = vm.run(inputs).at(0); };
  auto fetch = [&](Matrices& mm) {
    std::memcpy(mm.c_kiln.data(), y.data<float>(), size_t(kN * kN) * sizeof(float));
  };
  for (int t : {1, threads}) {
    Ratio d = compare(model_call, t, m, t == 1 ? 1 : 8, t == 1 ? 2 : 5, fetch);
    char title[160];
    std::snprintf(title, sizeof title, "the matmul op compiled as a model (run by the VM), %d thread%s", t,
                  t == 1 ? "" : "s");
    print(title, d);
  }
  for (int t : {1, threads}) {
    Ratio d = compare(jit_call("matmul_default"), t, m, t == 1 ? 1 : 8, t == 1 ? 2 : 5);
    char title[160];
    std::snprintf(title, sizeof title, "the matmul op's kernel, JIT-compiled, %d thread%s", t,
                  t == 1 ? "" : "s");
    print(title, d);
  }
  if (named_cpu) {
    // The hand-written schedule's 4 x 64 tile is sized for AVX-512.
    std::printf("hand-written schedule: not run for a named CPU (its tile is sized for AVX-512)\n");
    return 0;
  }
  Ratio single = compare(jit_call("matmul"), 1, m, 1, 2);
  print("hand-written schedule (4 x 64 tile, packed B panels), one thread", single);
  Ratio r = compare(jit_call("matmul_parallel"), threads, m, 8, 5);
  ParallelLaunchInfo info = last_parallel_launch();
  char title[128];
  std::snprintf(title, sizeof title,
                "hand-written schedule, %d threads (kiln: %d tasks on %d threads; oneDNN: %d OpenMP threads)",
                threads, info.chunks, info.threads, threads);
  print(title, r);
  std::printf("  kiln speed-up over one thread: %.2fx (oneDNN: %.2fx)\n",
              single.kiln_seconds / r.kiln_seconds, single.dnnl_seconds / r.dnnl_seconds);
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "matmul_bench: %s\n", e.what());
  return 1;
}
