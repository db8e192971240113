// The default schedule of a lowered kernel (see schedule.h).
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <string>

#include "schedule/schedule.h"

namespace kiln::schedule {
namespace {

namespace te = tir::te;

int64_t elements(const te::TensorNode& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

// Spatial loops first, reduce loops, then the innermost spatial loop: the
// inner loop then reads and writes consecutive elements.
void order_reduction(te::Stage& st) {
  std::vector<tir::Var> spatial, reduce;
  for (const te::Leaf& l : st.leaves()) (l.reduce ? reduce : spatial).push_back(l.var);
  if (reduce.empty() || spatial.empty()) return;
  if (st.leaves().back().reduce == false) return;  // already spatial-innermost
  std::vector<tir::Var> order(spatial.begin(), spatial.end() - 1);
  order.insert(order.end(), reduce.begin(), reduce.end());
  order.push_back(spatial.back());
  // A reduction over the innermost axis with a short spatial inner loop
  // (softmax over the last axis) keeps the reduce loop innermost.
  int64_t inner_extent = 0;
  for (const te::Leaf& l : st.leaves())
    if (l.var == spatial.back()) inner_extent = l.extent;
  if (inner_extent < 4) return;
  st.reorder(order);
}

void parallelize(te::Stage& st) {
  int64_t work = elements(*st.tensor());
  for (const te::IterVar& r : st.tensor()->reduction.axes) work *= r.extent;
  if (work < kParallelMinWork) return;
  const auto& leaves = st.leaves();
  if (leaves.empty() || leaves[0].reduce || leaves[0].kind != tir::ForKind::Serial) return;
  tir::Var outer = leaves[0].var;
  int64_t extent = leaves[0].extent;
  // Leave the innermost loop for vectorization, and unrolled loops alone.
  while (extent < kParallelMinIterations && st.leaves().size() > 2 && !st.leaves()[1].reduce &&
         st.leaves()[1].kind == tir::ForKind::Serial) {
    int64_t next = st.leaves()[1].extent;
    outer = st.fuse(outer, st.leaves()[1].var);
    extent *= next;
  }
  if (extent > 1) st.parallel(outer);
}

// A 5-D tensor is taken as an activation in channel blocks (n | blocks |
// rows | columns | lanes: convert-layout's): its rows run outside its
// blocks, so the threads split it by rows
// as they split the blocked convs around it (AnchorTile::block_axis) and
// each reads the rows it wrote on its own core. EfficientNet-B0's
// squeeze-and-excitation products, between a depthwise conv and a
// projection split by rows, took 2 to 3 times as long on two threads split
// by blocks. Another 5-D tensor (a 3-D conv's NCDHW: its depth before its
// channels) runs the same loops in another order.
void rows_before_blocks(te::Stage& st) {
  const std::vector<int64_t>& shape = st.tensor()->shape;
  const auto& leaves = st.leaves();
  if (shape.size() != 5 || leaves.size() < 5) return;
  for (size_t k = 0; k < 5; ++k)
    if (leaves[k].reduce || leaves[k].kind != tir::ForKind::Serial || leaves[k].extent != shape[k]) return;
  std::vector<tir::Var> order;
  for (const te::Leaf& l : leaves) order.push_back(l.var);
  std::swap(order[1], order[2]);
  st.reorder(order);
}

void vectorize_inner(te::Stage& st) {
  const auto& leaves = st.leaves();
  if (leaves.empty()) return;
  const te::Leaf& inner = leaves.back();
  if (inner.reduce || inner.extent < 4 || inner.kind != tir::ForKind::Serial) return;
  st.vectorize(inner.var);
}

// A reduction over a few taps (a pool's window, up to 3x3) around one
// vector (a block of channels, at most 16 lanes): its loops unrolled, so
// each tap's row and column are constants added to the output's, not a
// loop's counters and bounds (ResNet-18 QDQ's 3x3/2 max pool of 64
// channels at 112x112 in blocks, one thread, Zen 5: 180 -> 38 us). Not
// around longer vectors of output columns: the NCHW pool of the float
// model ran 93-98 -> 132-139 us unrolled.
void unroll_window(te::Stage& st) {
  const auto& leaves = st.leaves();
  if (leaves.empty() || leaves.back().reduce || leaves.back().kind != tir::ForKind::Vectorized ||
      leaves.back().extent > 16)
    return;
  int64_t taps = 1;
  std::vector<tir::Var> reduce;
  for (const te::Leaf& l : leaves)
    if (l.reduce) {
      taps *= l.extent;
      reduce.push_back(l.var);
    }
  if (reduce.empty() || taps > 9) return;
  for (const tir::Var& r : reduce) st.unroll(r);
}

// TransposeTile: loops ... contiguous_outer ... inner_outer | contiguous_inner
// (unrolled) | inner_inner (vectorized), then the parallel loop as usual.
void tile_transpose(te::Schedule& s, const TransposeTile& t, std::vector<const te::Stage*>& done) {
  te::Stage& st = s[t.tensor];
  const size_t rank = t.tensor->shape.size();
  if (st.inlined() || t.contiguous_axis < 0 || size_t(t.contiguous_axis) + 1 >= rank) return;
  const tir::Var contiguous = st.leaf(size_t(t.contiguous_axis)), inner = st.leaf(rank - 1);
  const tir::Var ci = st.split(contiguous, t.contiguous_block).second, vi = st.split(inner, t.lanes).second;
  std::vector<tir::Var> order;
  for (const te::Leaf& l : st.leaves())
    if (l.var != ci && l.var != vi) order.push_back(l.var);
  // Rows outside channels, as the convs it copies between split them
  // (rows_before_blocks).
  if (rank >= 4 && order.size() >= 3) std::swap(order[1], order[2]);
  order.push_back(ci);
  order.push_back(vi);
  st.reorder(order);
  st.unroll(ci);
  st.vectorize(vi);
  parallelize(st);
  done.push_back(&st);
}

// RowTile: the output's leading axes fused into one loop over rows, run in
// parallel when the whole is enough work; each stage computed at it. The
// output is the kernel's, or inlined into the kernel's one output of the
// same shape (an elementwise epilogue: softmax -> multiply), whose rows
// the loop then runs.
void tile_rows_of(te::Schedule& s, const RowTile& r, std::vector<const te::Stage*>& done) {
  te::Stage* out = &s[r.output];
  if (!out->is_output()) {
    std::vector<te::Stage*> outputs;
    for (const auto& st : s.stages())
      if (st->is_output()) outputs.push_back(st.get());
    if (!out->inlined() || outputs.size() != 1 || outputs[0]->inlined() ||
        outputs[0]->tensor()->shape != r.output->shape)
      return;
    out = outputs[0];
  }
  const size_t rank = r.output->shape.size();
  if (out->inlined() || rank < (r.each_element ? 1 : 2) || out->leaves().size() != rank) return;
  tir::Var row = out->leaf(0);
  const size_t kept = r.each_element ? 1 : 2;
  while (out->leaves().size() > kept) row = out->fuse(row, out->leaves()[1].var);
  // The work: the output's elements, or (each element a row) its stages'.
  int64_t work = elements(*r.output);
  if (r.each_element)
    for (const te::Tensor& t : r.stages) {
      int64_t w = elements(*t);
      for (const te::IterVar& a : t->reduction.axes) w *= a.extent;
      work += w;
    }
  if (work >= kParallelMinWork && out->leaves()[0].extent > 1) out->parallel(row);
  if (!r.each_element) vectorize_inner(*out);
  done.push_back(out);
  for (const te::Tensor& t : r.stages) {
    te::Stage* st = &s[t];
    if (st->inlined()) continue;
    st->compute_at(*out, row);
    order_reduction(*st);
    vectorize_inner(*st);
    done.push_back(st);
  }
}

}  // namespace

CpuTarget host_cpu_target() {
  CpuTarget t{16, 16};
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    t = {64, 32};
  else if (__builtin_cpu_supports("avx"))
    t = {32, 16};
  // CPUID leaf 1, ECX bit 29: F16C (GCC's __builtin_cpu_supports has no name for it).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  t.float16_conversions = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  if (t.vector_bytes == 64 && __builtin_cpu_supports("avx512vnni"))
    t.int8_dot_lanes = 16;
  else if (t.vector_bytes >= 32 && __builtin_cpu_supports("avxvnni"))
    t.int8_dot_lanes = 8;
  if (t.vector_bytes == 64 && __builtin_cpu_supports("avx512bw"))
    t.int16_dot_lanes = 16;
  else if (t.vector_bytes >= 32 && __builtin_cpu_supports("avx2"))
    t.int16_dot_lanes = 8;
#endif
  // What the system reports (glibc reads CPUID); a value it does not know
  // is 0 or -1, and a size outside what a core has is taken as unknown too.
  auto reported = [](int name, int64_t lo, int64_t hi) -> int64_t {
    const long v = sysconf(name);
    return v >= lo && v <= hi ? int64_t(v) : 0;
  };
  const int64_t l1 = reported(_SC_LEVEL1_DCACHE_SIZE, 8 << 10, 1 << 20);
  const int64_t ways = reported(_SC_LEVEL1_DCACHE_ASSOC, 2, 64);
  const int64_t l2 = reported(_SC_LEVEL2_CACHE_SIZE, 64 << 10, 64 << 20);
  if (l1 && ways && l2 && l1 % (ways * 64) == 0) {
    t.l1_bytes = l1;
    t.l1_ways = ways;
    t.l2_bytes = l2;
    t.caches_reported = true;
  }
  return t;
}

std::string describe_caches(const CpuTarget& cpu) {
  return "L1d " + std::to_string(cpu.l1_bytes >> 10) + " KiB " + std::to_string(cpu.l1_ways) + "-way, L2 " +
         std::to_string(cpu.l2_bytes >> 10) + " KiB" + (cpu.caches_reported ? "" : " (typical)");
}

void apply_default_schedule(te::Schedule& s, const std::vector<AnchorTile>& anchors,
                            const std::vector<TransposeTile>& transposes, const std::vector<RowTile>& rows,
                            const CpuTarget& cpu) {
  std::vector<const te::Stage*> done;
  for (const AnchorTile& a : anchors) tile_anchor(s, a, cpu, done);
  for (const TransposeTile& t : transposes) tile_transpose(s, t, done);
  for (const RowTile& r : rows) tile_rows_of(s, r, done);
  for (const auto& stage : s.stages()) {
    te::Stage& st = *stage;
    // An extern statement has no loops to schedule (its own say how it runs).
    if (st.tensor()->is_placeholder() || st.tensor()->is_extern() || st.inlined()) continue;
    if (std::find(done.begin(), done.end(), &st) != done.end()) continue;
    order_reduction(st);
    rows_before_blocks(st);
    parallelize(st);
    vectorize_inner(st);
    unroll_window(st);
  }
}

}  // namespace kiln::schedule
