// The GEMM family: PP-OCR rec's matrix products (its head, the attention's
// projections and its batched score and value products, a pointwise conv as
// a GEMM), BERT-base's projections and feed-forward products over 128
// tokens, a square 1024^3 and an odd 1023^3 (no block of whole vectors
// divides it), through the matmul op's default schedule for
// this CPU (what a compiled model gets, JIT-compiled with a .kmod's machine
// code), against OpenBLAS's and oneDNN's sgemm, on one thread, in one Google
// Benchmark run. kiln runs twice: with the right operand as given (what a
// product of two activations gets), and packed beforehand
// (nn.pack_matmul_weight: what a compiled model's constant weight gets).
// kiln's values are checked against OpenBLAS's first; a table of the
// ratios follows the benchmarks. `--cpu NAME` compiles kiln's code
// for another CPU (x86-64-v3: what an AVX2-only machine gets), with oneDNN
// limited to AVX2 when that CPU has no AVX-512 (OpenBLAS picks its own).
//
//   make bench    (or build/kiln_bench_gemm [--cpu NAME] [--benchmark_filter=...])
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "benchmark_times.h"
#include "codegen/codegen.h"
#include "codegen/target.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
#include "tir/transform/passes.h"

using namespace kiln;

namespace {

struct GemmShape {
  const char* what;
  int64_t batch, m, n, k;
  double flops() const { return 2.0 * double(batch) * double(m) * double(n) * double(k); }
};

const GemmShape kShapes[] = {
    {"rec head 40x6625x120", 1, 40, 6625, 120},        {"rec qkv 40x360x120", 1, 40, 360, 120},
    {"rec mlp up 40x240x120", 1, 40, 240, 120},        {"rec mlp down 40x120x240", 1, 40, 120, 240},
    {"rec proj 40x120x120", 1, 40, 120, 120},          {"rec scores 8 x 40x40x15", 8, 40, 40, 15},
    {"rec values 8 x 40x15x40", 8, 40, 15, 40},        {"rec 1x1 conv 480x480x480", 1, 480, 480, 480},
    {"bert qkv 128x768x768", 1, 128, 768, 768},        {"bert ffn up 128x3072x768", 1, 128, 3072, 768},
    {"bert ffn down 128x768x3072", 1, 128, 768, 3072}, {"square 1024x1024x1024", 1, 1024, 1024, 1024},
    {"odd 1023x1023x1023", 1, 1023, 1023, 1023},
};

std::string kernel_name(size_t i) { return "gemm" + std::to_string(i); }
std::string packed_kernel_name(size_t i) { return "packed" + std::to_string(i); }

// The right operand's packed panels, as wide as the target's tiles.
int64_t panel_columns(const GemmShape& g, const codegen::Target& target) {
  return schedule::product_column_block(codegen::schedule_target(target), g.n);
}

tir::PrimFunc kiln_gemm(const GemmShape& g, const std::string& name, const codegen::Target& target) {
  Shape as = {g.m, g.k}, bs = {g.k, g.n}, ys = {g.m, g.n};
  if (g.batch > 1) {
    as.insert(as.begin(), g.batch);
    bs.insert(bs.begin(), g.batch);
    ys.insert(ys.begin(), g.batch);
  }
  return bench::lowered_op("matmul", {}, {{as, DType::Float32}, {bs, DType::Float32}}, {ys, DType::Float32},
                           name, target);
}

// x @ W with W packed (batch 1 only: packing is for constant weights).
tir::PrimFunc kiln_packed_gemm(const GemmShape& g, const std::string& name, const codegen::Target& target) {
  const int64_t columns = panel_columns(g, target);
  return bench::lowered_op(
      "nn.matmul_packed", {{"units", g.n}},
      {{{g.m, g.k}, DType::Float32}, {{(g.n + columns - 1) / columns, g.k, columns}, DType::Float32}},
      {{g.m, g.n}, DType::Float32}, name, target);
}

struct Operands {
  bench::Floats a, b, c;
  Tensor packed;  // b packed, for batch 1
  Operands(const GemmShape& g, const codegen::Target& target)
      : a(size_t(g.batch * g.m * g.k)), b(size_t(g.batch * g.k * g.n)), c(size_t(g.batch * g.m * g.n)) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 17) - 8) * 0.125f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 13) - 6) * 0.25f;
    if (g.batch == 1)
      packed = run_op(*find_op("nn.pack_matmul_weight"), {Tensor::wrap(b.data(), {g.k, g.n}, DType::Float32)},
                      {{"columns", panel_columns(g, target)}})[0];
  }
};

void openblas_gemm(const GemmShape& g, Operands& o) {
  for (int64_t q = 0; q < g.batch; ++q)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(g.m), int(g.n), int(g.k), 1.0f,
                o.a.data() + q * g.m * g.k, int(g.k), o.b.data() + q * g.k * g.n, int(g.n), 0.0f,
                o.c.data() + q * g.m * g.n, int(g.n));
}

void onednn_gemm(const GemmShape& g, Operands& o) {
  for (int64_t q = 0; q < g.batch; ++q) {
    dnnl_status_t st = dnnl_sgemm('N', 'N', g.m, g.n, g.k, 1.0f, o.a.data() + q * g.m * g.k, g.k,
                                  o.b.data() + q * g.k * g.n, g.n, 0.0f, o.c.data() + q * g.m * g.n, g.n);
    if (st != dnnl_success) throw Error("dnnl_sgemm failed with status " + std::to_string(int(st)));
  }
}

// kiln's results, unpacked and packed, against OpenBLAS's (the inputs are
// multiples of 1/32, so all are exact up to the order of the additions).
void check(codegen::JitModule& jit, size_t i, const codegen::Target& target) {
  const GemmShape& g = kShapes[i];
  Operands kiln(g, target), blas(g, target);
  openblas_gemm(g, blas);
  auto compare = [&](const char* what) {
    double max_err = 0;
    for (size_t e = 0; e < kiln.c.size(); ++e)
      max_err = std::max(max_err, double(std::fabs(kiln.c[e] - blas.c[e])));
    if (max_err > 1e-3)
      throw Error(std::string(g.what) + ": kiln (" + what + ") and OpenBLAS differ by up to " +
                  std::to_string(max_err));
  };
  jit.run(kernel_name(i), {kiln.a.data(), kiln.b.data(), kiln.c.data()});
  compare("unpacked");
  if (g.batch != 1) return;
  for (size_t e = 0; e < kiln.c.size(); ++e) kiln.c[e] = 0.0f;
  jit.run(packed_kernel_name(i), {kiln.a.data(), kiln.packed.data<float>(), kiln.c.data()});
  compare("packed");
}

const char* const kPeers[] = {"kiln", "kiln packed", "OpenBLAS", "oneDNN"};

std::string bench_name(size_t shape, const char* peer) {
  return std::string(kShapes[shape].what) + "/" + peer;
}

}  // namespace

int main(int argc, char** argv) try {
  kiln::bench::keep_heap_memory();
  const codegen::Target target = bench::take_bench_target(argc, argv);
  std::printf("CPU: %s\n", codegen::host_cpu_summary().c_str());
  bench::print_named_cpu(target);
  const tir::TirPassOptions options = codegen::tir_pass_options(target);
  std::vector<tir::PrimFunc> funcs;
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    funcs.push_back(tir::lower_for_build(kiln_gemm(kShapes[i], kernel_name(i), target), options));
    if (kShapes[i].batch == 1)
      funcs.push_back(
          tir::lower_for_build(kiln_packed_gemm(kShapes[i], packed_kernel_name(i), target), options));
  }
  codegen::CodegenOptions codegen_options;
  codegen_options.target = target;
  auto jit = codegen::JitModule::create(funcs, codegen_options);
  set_parallel_num_threads(1);
  bench::set_dnnl_threads(1);
  openblas_set_num_threads(1);
  for (size_t i = 0; i < std::size(kShapes); ++i) check(*jit, i, target);

  std::vector<std::unique_ptr<Operands>> operands;
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    operands.push_back(std::make_unique<Operands>(kShapes[i], target));
    const GemmShape& g = kShapes[i];
    Operands& o = *operands.back();
    auto counters = [g](benchmark::State& state) {
      state.counters["GFLOP/s"] =
          benchmark::Counter(g.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    };
    benchmark::RegisterBenchmark(bench_name(i, "kiln").c_str(), [&jit, &o, i,
                                                                 counters](benchmark::State& state) {
      for (auto _ : state) jit->run(kernel_name(i), {o.a.data(), o.b.data(), o.c.data()});
      counters(state);
    })->UseRealTime();
    if (g.batch == 1)
      benchmark::RegisterBenchmark(bench_name(i, "kiln packed").c_str(), [&jit, &o, i,
                                                                          counters](benchmark::State& state) {
        for (auto _ : state)
          jit->run(packed_kernel_name(i), {o.a.data(), o.packed.data<float>(), o.c.data()});
        counters(state);
      })->UseRealTime();
    benchmark::RegisterBenchmark(bench_name(i, "OpenBLAS").c_str(), [g, &o,
                                                                     counters](benchmark::State& state) {
      for (auto _ : state) openblas_gemm(g, o);
      counters(state);
    })->UseRealTime();
    benchmark::RegisterBenchmark(bench_name(i, "oneDNN").c_str(), [g, &o, counters](benchmark::State& state) {
      for (auto _ : state) onednn_gemm(g, o);
      counters(state);
    })->UseRealTime();
  }
  const std::map<std::string, double> seconds = bench::run_benchmarks(argc, argv);

  std::printf("\n%-28s %9s %9s %9s %9s %8s %9s %9s %9s\n", "GEMM (one thread)", "kiln us", "packed",
              "OpenBLAS", "oneDNN", "kiln GF", "vs BLAS", "vs oneDNN", "packed");
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    double t[4] = {0, 0, 0, 0};
    for (int p = 0; p < 4; ++p)
      if (auto it = seconds.find(bench_name(i, kPeers[p])); it != seconds.end()) t[p] = it->second;
    if (t[0] <= 0) continue;  // filtered out
    auto ratio = [](double peer, double own) { return peer > 0 && own > 0 ? peer / own : 0.0; };
    std::printf("%-28s %9.1f %9.1f %9.1f %9.1f %8.1f %8.2fx %8.2fx %8.2fx\n", kShapes[i].what, t[0] * 1e6,
                t[1] * 1e6, t[2] * 1e6, t[3] * 1e6, kShapes[i].flops() / t[0] * 1e-9, ratio(t[2], t[0]),
                ratio(t[3], t[0]), ratio(t[3], t[1]));
  }
  std::printf(
      "ratio: the peer's time / kiln's time (above 1: kiln is faster); packed: oneDNN / kiln with the right "
      "operand packed beforehand, as a compiled model's constant weight is (0: batched, not packed)\n");
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "gemm_bench: %s\n", e.what());
  return 1;
}
