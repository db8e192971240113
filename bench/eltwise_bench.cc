// The elementwise family: activations (relu, hard_swish, sigmoid, silu), a binary
// add and a softmax over the last axis, on PP-OCR's shapes (silu on
// EfficientNet-B0's first expanded layer), a mean over the last axis (a
// layer norm's, 128 x 768) and a mean and a max over an image's rows and
// columns (a spatial mean, a global max pool), through each op's default
// schedule for this CPU (what a compiled model gets, JIT-compiled with a
// .kmod's machine code), against oneDNN's eltwise, binary, softmax and
// reduction primitives (plain layouts), on one thread, in one Google Benchmark
// run. kiln's values are checked against oneDNN's first; a table of ratios
// follows the benchmarks.
//
//   make bench    (or build/kiln_bench_eltwise [--benchmark_filter=...])
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
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

enum class Kind { Relu, HardSwish, Sigmoid, Silu, Add, Softmax, Mean, Max };

struct EltwiseCase {
  const char* what;
  Kind kind;
  Shape shape;
  int reduced = 1;  // Mean and Max: the trailing axes reduced
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t outputs() const {
    if (kind != Kind::Mean && kind != Kind::Max) return elements();
    int64_t n = elements();
    for (int k = 0; k < reduced; ++k) n /= shape[shape.size() - 1 - size_t(k)];
    return n;
  }
};

const EltwiseCase kCases[] = {
    {"relu 1x96x80x80", Kind::Relu, {1, 96, 80, 80}},
    {"hard_swish 1x120x12x80", Kind::HardSwish, {1, 120, 12, 80}},
    {"sigmoid 1x96x80x80", Kind::Sigmoid, {1, 96, 80, 80}},
    {"silu 1x96x112x112", Kind::Silu, {1, 96, 112, 112}},
    {"add 1x96x80x80", Kind::Add, {1, 96, 80, 80}},
    {"softmax 40x6625 (last axis)", Kind::Softmax, {1, 40, 6625}},
    {"mean 128x768 (last axis)", Kind::Mean, {1, 128, 768}},
    {"mean 1x13x106x122 (H, W)", Kind::Mean, {1, 13, 106, 122}, 2},
    {"max 1x64x56x56 (H, W)", Kind::Max, {1, 64, 56, 56}, 2},
};

std::string kernel_name(size_t i) { return "eltwise" + std::to_string(i); }

const char* op_name(Kind k) {
  switch (k) {
    case Kind::Relu:
      return "nn.relu";
    case Kind::HardSwish:
      return "nn.hard_swish";
    case Kind::Sigmoid:
      return "sigmoid";
    case Kind::Silu:
      return "nn.silu";
    case Kind::Add:
      return "add";
    case Kind::Softmax:
      return "nn.softmax";
    case Kind::Mean:
      return "mean";
    case Kind::Max:
      return "max";
  }
  return "";
}

int inputs_of(Kind k) { return k == Kind::Add ? 2 : 1; }

tir::PrimFunc kiln_eltwise(const EltwiseCase& c, const std::string& name) {
  TensorDesc t{c.shape, DType::Float32};
  Attrs attrs;
  if (c.kind == Kind::Softmax) attrs = {{"axis", int64_t(-1)}};
  TensorDesc out = t;
  if (c.kind == Kind::Mean || c.kind == Kind::Max) {
    std::vector<int64_t> axes;
    for (int k = c.reduced; k >= 1; --k) {
      axes.push_back(-k);
      out.shape[out.shape.size() - size_t(k)] = 1;
    }
    attrs = {{"axis", axes}, {"keepdims", int64_t(1)}};
  }
  return bench::lowered_op(op_name(c.kind), attrs, std::vector<TensorDesc>(size_t(inputs_of(c.kind)), t), out,
                           name, codegen::host_target());
}

struct Buffers {
  bench::Floats a, b, y;
  explicit Buffers(const EltwiseCase& c)
      : a(size_t(c.elements())), b(size_t(c.elements())), y(size_t(c.elements())) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = float(int(i % 29) - 14) * 0.25f;
      b[i] = float(int(i % 11) - 5) * 0.5f;
    }
  }
};

// oneDNN's primitive for the case on the user's buffers (plain layout).
struct DnnlEltwise {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;

  DnnlEltwise(const EltwiseCase& c, Buffers& buf) {
    using dnnl::memory;
    memory::dims dims(c.shape.begin(), c.shape.end());
    const auto tag = dims.size() == 4 ? memory::format_tag::nchw : memory::format_tag::abc;
    memory::desc md(dims, memory::data_type::f32, tag);
    memory a(md, engine, buf.a.data()), b(md, engine, buf.b.data()), y(md, engine, buf.y.data());
    const auto fwd = dnnl::prop_kind::forward_inference;
    switch (c.kind) {
      case Kind::Relu:
      case Kind::HardSwish:
      case Kind::Sigmoid:
      case Kind::Silu: {
        const auto alg = c.kind == Kind::Relu        ? dnnl::algorithm::eltwise_relu
                         : c.kind == Kind::HardSwish ? dnnl::algorithm::eltwise_hardswish
                         : c.kind == Kind::Silu      ? dnnl::algorithm::eltwise_swish
                                                     : dnnl::algorithm::eltwise_logistic;
        // swish is x * sigmoid(alpha x): alpha 1 is silu.
        dnnl::eltwise_forward::desc d(fwd, alg, md, c.kind == Kind::Silu ? 1.0f : 0.0f, 0.0f);
        prim = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(d, engine));
        args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, y}};
        break;
      }
      case Kind::Add: {
        dnnl::binary::desc d(dnnl::algorithm::binary_add, md, md, md);
        prim = dnnl::binary(dnnl::binary::primitive_desc(d, engine));
        args = {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, y}};
        break;
      }
      case Kind::Softmax: {
        dnnl::softmax_forward::desc d(fwd, md, int(dims.size()) - 1);
        prim = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(d, engine));
        args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, y}};
        break;
      }
      case Kind::Mean:
      case Kind::Max: {
        memory::dims reduced = dims;
        for (int k = 1; k <= c.reduced; ++k) reduced[reduced.size() - size_t(k)] = 1;
        memory::desc rd(reduced, memory::data_type::f32, tag);
        const auto alg =
            c.kind == Kind::Mean ? dnnl::algorithm::reduction_mean : dnnl::algorithm::reduction_max;
        dnnl::reduction::desc d(alg, md, rd, 0.0f, 0.0f);
        prim = dnnl::reduction(dnnl::reduction::primitive_desc(d, engine));
        args = {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, memory(rd, engine, buf.y.data())}};
        break;
      }
    }
  }
  void run() {
    prim.execute(stream, args);
    stream.wait();
  }
};

void run_kiln(codegen::JitModule& jit, size_t i, Buffers& b) {
  if (inputs_of(kCases[i].kind) == 2)
    jit.run(kernel_name(i), {b.a.data(), b.b.data(), b.y.data()});
  else
    jit.run(kernel_name(i), {b.a.data(), b.y.data()});
}

void check(codegen::JitModule& jit, size_t i) {
  const EltwiseCase& c = kCases[i];
  Buffers kiln(c), peer(c);
  run_kiln(jit, i, kiln);
  DnnlEltwise(c, peer).run();
  double max_err = 0;
  for (size_t e = 0; e < kiln.y.size(); ++e)
    max_err = std::max(max_err, double(std::fabs(kiln.y[e] - peer.y[e])));
  if (!(max_err <= 1e-5))
    throw Error(std::string(c.what) + ": kiln and oneDNN differ by up to " + std::to_string(max_err));
}

std::string bench_name(size_t i, const char* peer) { return std::string(kCases[i].what) + "/" + peer; }

}  // namespace

int main(int argc, char** argv) try {
  kiln::bench::keep_heap_memory();
  std::printf("CPU: %s\n", codegen::host_cpu_summary().c_str());
  const tir::TirPassOptions options = codegen::tir_pass_options(codegen::host_target());
  std::vector<tir::PrimFunc> funcs;
  for (size_t i = 0; i < std::size(kCases); ++i)
    funcs.push_back(tir::lower_for_build(kiln_eltwise(kCases[i], kernel_name(i)), options));
  auto jit = codegen::JitModule::create(funcs);
  set_parallel_num_threads(1);
  bench::set_dnnl_threads(1);
  for (size_t i = 0; i < std::size(kCases); ++i) check(*jit, i);

  std::vector<std::unique_ptr<Buffers>> buffers;
  std::vector<std::unique_ptr<DnnlEltwise>> peers;
  for (size_t i = 0; i < std::size(kCases); ++i) {
    buffers.push_back(std::make_unique<Buffers>(kCases[i]));
    Buffers& b = *buffers.back();
    peers.push_back(std::make_unique<DnnlEltwise>(kCases[i], b));
    DnnlEltwise& p = *peers.back();
    const EltwiseCase& c = kCases[i];
    const int64_t outputs = c.outputs();
    const double bytes = double(c.elements() * inputs_of(c.kind) + outputs) * 4;
    auto counters = [bytes](benchmark::State& state) {
      state.counters["GB/s"] =
          benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    };
    benchmark::RegisterBenchmark(bench_name(i, "kiln").c_str(), [&jit, &b, i,
                                                                 counters](benchmark::State& state) {
      for (auto _ : state) run_kiln(*jit, i, b);
      counters(state);
    })->UseRealTime();
    benchmark::RegisterBenchmark(bench_name(i, "oneDNN").c_str(), [&p, counters](benchmark::State& state) {
      for (auto _ : state) p.run();
      counters(state);
    })->UseRealTime();
  }
  const std::map<std::string, double> seconds = bench::run_benchmarks(argc, argv);

  std::printf("\n%-30s %10s %10s %9s\n", "elementwise (one thread)", "kiln us", "oneDNN us", "vs oneDNN");
  for (size_t i = 0; i < std::size(kCases); ++i) {
    auto k = seconds.find(bench_name(i, "kiln")), d = seconds.find(bench_name(i, "oneDNN"));
    if (k == seconds.end() || d == seconds.end()) continue;  // filtered out
    std::printf("%-30s %10.1f %10.1f %8.2fx\n", kCases[i].what, k->second * 1e6, d->second * 1e6,
                d->second / k->second);
  }
  std::printf("ratio: oneDNN's time / kiln's time (above 1: kiln is faster)\n");
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "eltwise_bench: %s\n", e.what());
  return 1;
}
