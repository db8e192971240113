// Register tiles for reductions that produce a matrix-like output (conv2d,
// dense, matmul): see AnchorTile in schedule.h.
//
// For conv2d y[n, oc, oh, ow] with an epilogue stage out (bias, activation):
//
//   out:  n | oc_o | oh  (fused, parallel) | ow_o | oc_i (unrolled) | ow_i (vectorized)
//   y:    computed at ow_o: a local buffer of (1, RB, 1, CB) accumulators,
//         loops rc | ry | rx | oc_i (unrolled) | ow_i (vectorized)
//
// Per reduction step the tile reads CB consecutive inputs and RB weights and
// does RB x CB multiply-adds into registers; the output is written once,
// with the epilogue applied. The blocks are the largest divisors of the
// extents up to kRowBlock and kColBlock, so every shape tiles without a
// remainder loop.
#include <algorithm>

#include "schedule/schedule.h"

namespace kiln::schedule {
namespace {

namespace te = tir::te;

// 4 x 16 float32 accumulators: 8 AVX2 or 4 AVX-512 registers.
constexpr int64_t kRowBlock = 4;
constexpr int64_t kColBlock = 16;
// Below this many multiply-adds a kernel runs on one thread: waking the pool
// costs more than the work (tens of microseconds).
constexpr int64_t kParallelMinWork = 1 << 18;

int64_t largest_divisor_up_to(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// A column block of whole vectors (8 float32 lanes) when one divides the
// extent, else the largest divisor: a block of 10 would be a vector and a
// scalar tail in every step.
int64_t column_block(int64_t n) {
  for (int64_t d = kColBlock; d >= 8; d -= 8)
    if (n % d == 0) return d;
  return largest_divisor_up_to(n, kColBlock);
}

// The output covers the anchor, or a prefix of its columns (an anchor
// computed on columns padded to whole tiles).
bool fits_in(const std::vector<int64_t>& out, const std::vector<int64_t>& anchor, size_t col) {
  if (out.size() != anchor.size()) return false;
  for (size_t k = 0; k < out.size(); ++k)
    if (k == col ? out[k] > anchor[k] : out[k] != anchor[k]) return false;
  return true;
}

te::Stage* find_stage(te::Schedule& s, const te::Tensor& t) {
  for (const auto& st : s.stages())
    if (st->tensor() == t) return st.get();
  return nullptr;
}

}  // namespace

bool tile_anchor(te::Schedule& s, const AnchorTile& a, std::vector<const te::Stage*>& done) {
  te::Stage* anchor = find_stage(s, a.tensor);
  if (!anchor || anchor->inlined() || a.tensor->reduction.kind == te::ReduceKind::None) return false;
  size_t rank = a.tensor->shape.size();
  if (a.row_axis < 0 || a.col_axis < 0 || size_t(a.row_axis) >= rank || size_t(a.col_axis) >= rank ||
      a.row_axis >= a.col_axis)
    return false;
  // The stage that writes the kernel's output: the anchor's cache copy when
  // the anchor is the output, else its epilogue of the same shape.
  std::vector<te::Stage*> outputs;
  for (const auto& st : s.stages())
    if (st->is_output()) outputs.push_back(st.get());
  if (outputs.size() != 1 || !fits_in(outputs[0]->tensor()->shape, a.tensor->shape, size_t(a.col_axis)))
    return false;
  te::Tensor tile_tensor = a.tensor;
  te::Stage* out = outputs[0];
  if (out == anchor) {
    tile_tensor = s.cache_write(a.tensor, "local");
    out = find_stage(s, a.tensor);
  }
  te::Stage& tile = *find_stage(s, tile_tensor);
  const auto& shape = a.tensor->shape;
  int64_t rb = largest_divisor_up_to(shape[size_t(a.row_axis)], kRowBlock);
  int64_t cb = column_block(shape[size_t(a.col_axis)]);
  std::vector<tir::Var> axes;
  for (size_t k = 0; k < rank; ++k) axes.push_back(out->leaf(k));
  auto [ro, ri] = out->split(axes[size_t(a.row_axis)], rb);
  // Columns beyond the output (padding) are computed in the last tile and
  // never stored.
  auto [co, ci] = out->split_with_tail(axes[size_t(a.col_axis)], cb);
  std::vector<tir::Var> order;
  for (size_t k = 0; k < rank; ++k)
    order.push_back(k == size_t(a.row_axis) ? ro : k == size_t(a.col_axis) ? co : axes[k]);
  order.push_back(ri);
  order.push_back(ci);
  out->reorder(order);
  out->unroll(ri);
  out->vectorize(ci);
  // The loops before the column-tile loop run in parallel, fused into one.
  int64_t work = 1;
  for (int64_t d : shape) work *= d;
  for (const te::IterVar& r : a.tensor->reduction.axes) work *= r.extent;
  tir::Var outer = out->leaf(0);
  while (out->leaves().size() > 1 && out->leaves()[1].var != co)
    outer = out->fuse(outer, out->leaves()[1].var);
  if (work >= kParallelMinWork && out->leaves()[0].var != co && out->leaves()[0].extent > 1)
    out->parallel(outer);
  tile.compute_at(*out, co);
  // In the tile: reduce loops outermost, then the accumulators.
  std::vector<tir::Var> tile_order;
  for (const te::Leaf& l : tile.leaves())
    if (l.reduce) tile_order.push_back(l.var);
  for (const te::Leaf& l : tile.leaves())
    if (!l.reduce) tile_order.push_back(l.var);
  tile.reorder(tile_order);
  tile.unroll(tile.leaf(tile.leaves().size() - rank + size_t(a.row_axis)));
  tile.vectorize(tile.leaves().back().var);
  done.push_back(out);
  done.push_back(&tile);
  return true;
}

}  // namespace kiln::schedule
