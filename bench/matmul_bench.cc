// float32 matmul 1024 x 1024 x 1024 on one thread: a kiln kernel written and
// scheduled with the tensor-expression API, JIT-compiled for the host, against
// oneDNN's sgemm in the same run (the machines are noisy; compare the ratio).
//
//   make bench        (OMP_NUM_THREADS=1 is set here before oneDNN starts)
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "codegen/codegen.h"
#include "tir/te/te.h"
#include "tir/transform/passes.h"

using namespace kiln;
namespace te = kiln::tir::te;

namespace {

constexpr int64_t kN = 1024;

tir::PrimFunc scheduled_matmul() {
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
  te::Stage& tile = s[C_tile];
  tile.compute_at(c, io);
  tile.reorder({k.var, tile.leaf(0), tile.leaf(1)});
  tile.unroll(tile.leaf(1));
  tile.vectorize(tile.leaf(2));
  te::Stage& panel = s[B_panel];
  panel.compute_at(c, jo);
  panel.vectorize(panel.leaf(1));
  return te::lower(s, {A, B, C}, "matmul");
}

template <typename F>
double best_seconds(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main() try {
  setenv("OMP_NUM_THREADS", "1", 1);
  std::vector<float> a(size_t(kN * kN)), b(size_t(kN * kN)), c_kiln(size_t(kN * kN)), c_dnnl(size_t(kN * kN));
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = float(int(i % 17) - 8) * 0.125f;
    b[i] = float(int(i % 13) - 6) * 0.25f;
  }
  auto jit = codegen::JitModule::create({tir::lower_for_build(scheduled_matmul())});
  auto run_kiln = [&] { jit->run("matmul", {a.data(), b.data(), c_kiln.data()}); };
  auto run_dnnl = [&] {
    dnnl_status_t st = dnnl_sgemm('N', 'N', kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f,
                                  c_dnnl.data(), kN);
    if (st != dnnl_success) throw Error("dnnl_sgemm failed with status " + std::to_string(int(st)));
  };
  run_kiln();
  run_dnnl();
  double max_err = 0;
  for (size_t i = 0; i < c_kiln.size(); ++i)
    max_err = std::max(max_err, double(std::fabs(c_kiln[i] - c_dnnl[i])));
  std::printf("max |kiln - oneDNN| = %g\n", max_err);
  if (max_err > 1e-2) {
    std::printf("WRONG: the results differ\n");
    return 1;
  }
  const double flops = 2.0 * double(kN) * double(kN) * double(kN);
  // Interleaved so both see the same machine load.
  double t_kiln = 1e30, t_dnnl = 1e30;
  for (int round = 0; round < 3; ++round) {
    t_kiln = std::min(t_kiln, best_seconds(run_kiln, 2));
    t_dnnl = std::min(t_dnnl, best_seconds(run_dnnl, 2));
  }
  std::printf("matmul float32 %lldx%lldx%lld, one thread\n", (long long)kN, (long long)kN, (long long)kN);
  std::printf("  kiln   %8.2f ms  %7.1f GFLOP/s\n", t_kiln * 1e3, flops / t_kiln * 1e-9);
  std::printf("  oneDNN %8.2f ms  %7.1f GFLOP/s\n", t_dnnl * 1e3, flops / t_dnnl * 1e-9);
  std::printf("  kiln / oneDNN speed ratio: %.3f\n", t_dnnl / t_kiln);
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "matmul_bench: %s\n", e.what());
  return 1;
}
