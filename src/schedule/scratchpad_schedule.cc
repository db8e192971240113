// The schedule of a kernel for a DSP with a scratchpad (Hexagon's VTCM).
//
// The kernel's output Y is computed into a scratchpad buffer and copied out
// tile by tile (cache_write, then the copy's loops split into tiles); the
// compute is placed at the tile loop (compute_at), and each input that only
// it reads is copied into the scratchpad there too (cache_read), so each
// tile's working set sits in VTCM while it is computed:
//
//   for (t_c, t_h) in tiles(Y):              Y: [1, 16, 8, 8], tiles of [1, 8, 4, 8]
//     X_buf = X[window of the tile]          global.vtcm, bound inference sizes it
//     W_buf = W[the tile's channels]         global.vtcm
//     Y_vtcm = conv(X_buf, W_buf)            global.vtcm
//     Y[tile] = Y_vtcm
//
// Other computed stages (a materialized transpose, a softmax's row maximum)
// are kept whole in the scratchpad. `level` chooses the tile: level 0 is the
// whole output; each level halves the largest tile extent, outer axes before
// the innermost. The caller lowers each level and keeps the first whose
// scratchpad peak fits (lower/registry.cc). One thread; innermost loops
// carry the vector hint, which vectorize-loops follows for integer loops
// only (this QEMU cannot run HVX floating point).
#include <algorithm>
#include <set>

#include "schedule/schedule.h"

namespace kiln::schedule {
namespace {

namespace te = tir::te;

// The tile extents at `level`, or empty when the tiles cannot get smaller.
std::vector<int64_t> tile_extents(const std::vector<int64_t>& shape, int level) {
  std::vector<int64_t> tile = shape;
  for (int l = 0; l < level; ++l) {
    size_t best = tile.size();
    // The largest outer extent above 1; the innermost axis only when no outer one is left.
    for (size_t a = 0; a + 1 < tile.size(); ++a)
      if (tile[a] > 1 && (best == tile.size() || tile[a] > tile[best])) best = a;
    if (best == tile.size() && !tile.empty() && tile.back() > 1) best = tile.size() - 1;
    if (best == tile.size()) return {};
    tile[best] = (tile[best] + 1) / 2;
  }
  return tile;
}

// Whether every read of `st`'s value is by a stage of `targets`, directly or
// through inlined stages. `copy_out` (the output after cache_write) reads
// only its cache, whatever its tensor lists.
bool feeds_only(const te::Schedule& s, const te::Stage& st, const std::set<const te::TensorNode*>& targets,
                const te::TensorNode* copy_out) {
  if (targets.count(st.tensor().get())) return true;
  if (!st.inlined()) return false;
  bool any = false;
  for (const auto& other : s.stages())
    if (other->tensor().get() != copy_out)
      for (const auto& in : other->tensor()->inputs)
        if (in.get() == st.tensor().get()) {
          if (!feeds_only(s, *other, targets, copy_out)) return false;
          any = true;
        }
  return any;
}

// Whether the stages reading `t` all feed only `targets` (`copy_out` as above).
bool read_only_by(const te::Schedule& s, const te::TensorNode* t,
                  const std::set<const te::TensorNode*>& targets, const te::TensorNode* copy_out,
                  std::vector<te::Tensor>* readers) {
  bool any = false;
  for (const auto& other : s.stages())
    if (other->tensor().get() != copy_out)
      for (const auto& in : other->tensor()->inputs)
        if (in.get() == t) {
          if (!feeds_only(s, *other, targets, copy_out)) return false;
          if (readers) readers->push_back(other->tensor());
          any = true;
        }
  return any;
}

// Spatial loops, reduce loops, then the innermost spatial loop. An int32
// reduction whose last reduce axis has extent 4 (a blocked int8 conv's
// channel block) keeps that axis innermost, under the columns: the form
// form-dot-products turns into dot_i8x4.
void order_reduction(te::Stage& st) {
  std::vector<tir::Var> spatial, reduce;
  for (const te::Leaf& l : st.leaves()) (l.reduce ? reduce : spatial).push_back(l.var);
  if (reduce.empty() || spatial.empty() || !st.leaves().back().reduce) return;
  const te::TensorNode& t = *st.tensor();
  bool block_of_four = t.dtype == tir::DataType::int32() && t.reduction.axes.size() > 1 &&
                       t.reduction.axes.back().extent == 4 && st.leaves().back().extent == 4;
  std::vector<tir::Var> order(spatial.begin(), spatial.end() - 1);
  order.insert(order.end(), reduce.begin(), reduce.end() - (block_of_four ? 1 : 0));
  order.push_back(spatial.back());
  if (block_of_four) order.push_back(reduce.back());
  st.reorder(order);
}

}  // namespace

bool apply_scratchpad_schedule(te::Schedule& s, const CpuTarget& cpu, int level) {
  std::vector<te::Stage*> outputs, computed;
  // An extern statement (a running sum, a scatter) reads and writes whole
  // tensors in their own memory: nothing is tiled into the scratchpad.
  for (const auto& st : s.stages())
    if (st->tensor()->is_extern()) return level == 0;
  for (const auto& st : s.stages()) {
    if (st->is_output()) outputs.push_back(st.get());
    if (!st->tensor()->is_placeholder() && !st->inlined() && !st->is_output()) computed.push_back(st.get());
  }
  if (outputs.size() != 1 || outputs[0]->tensor()->is_placeholder()) return level == 0;
  std::vector<int64_t> tile = tile_extents(outputs[0]->tensor()->shape, level);
  if (tile.empty()) return false;

  te::Tensor y = outputs[0]->tensor();
  te::Tensor yv = s.cache_write(y, "global.vtcm");
  te::Stage& out = s[y];
  std::vector<tir::Var> outers, inners;
  // Split every axis into (tile loop, element loop); tile loops outermost.
  std::vector<tir::Var> axes;
  for (const te::Leaf& l : out.leaves()) axes.push_back(l.var);
  for (size_t a = 0; a < axes.size(); ++a) {
    auto [o, i] = out.split_with_tail(axes[a], tile[a]);
    outers.push_back(o);
    inners.push_back(i);
  }
  std::vector<tir::Var> order = outers;
  order.insert(order.end(), inners.begin(), inners.end());
  out.reorder(order);
  const tir::Var& tile_loop = outers.back();

  // Stages whose values only the tile's compute reads are computed per tile
  // too (an anchor under its epilogue, a row's maximum under a softmax):
  // consumers first, so a producer sees where its readers went.
  std::set<const te::TensorNode*> per_tile = {yv.get()};
  std::set<const te::TensorNode*> copies = {y.get()};  // in and out of VTCM
  std::vector<te::Stage*> attached = {&s[yv]};
  for (auto it = computed.rbegin(); it != computed.rend(); ++it) {
    te::Stage& st = **it;
    if (!read_only_by(s, st.tensor().get(), per_tile, y.get(), nullptr)) {
      st.set_scope("global.vtcm");  // whole, in VTCM (the capacity check judges it)
      continue;
    }
    per_tile.insert(st.tensor().get());
    attached.push_back(&st);
  }
  // Inputs only those stages read: each tile's region copied in.
  std::vector<te::Tensor> placeholders;
  for (const auto& st : s.stages())
    if (st->tensor()->is_placeholder()) placeholders.push_back(st->tensor());
  for (const te::Tensor& p : placeholders) {
    std::vector<te::Tensor> readers;
    if (!read_only_by(s, p.get(), per_tile, y.get(), &readers)) continue;
    // A materialized elementwise reader (a conv's padded input) is itself
    // the copy into VTCM, and bound inference sees its exact window.
    bool copied_by_readers = std::all_of(readers.begin(), readers.end(), [&](const te::Tensor& r) {
      return !s[r].inlined() && r->reduction.kind == te::ReduceKind::None;
    });
    if (copied_by_readers) continue;
    te::Tensor buf = s.cache_read(p, "global.vtcm", readers);
    copies.insert(buf.get());
    s[buf].compute_at(out, tile_loop);
  }
  for (te::Stage* st : attached) {
    st->set_scope("global.vtcm");
    st->compute_at(out, tile_loop);
    order_reduction(*st);
  }
  // Innermost loops carry the vector hint: the copies into and out of VTCM
  // always, the compute stages when cpu.vector_compute (vectorize-loops
  // leaves float loops scalar either way).
  for (const auto& st : s.stages()) {
    if (st->tensor()->is_placeholder() || st->inlined() || st->leaves().empty()) continue;
    if (!cpu.vector_compute && !copies.count(st->tensor().get())) continue;
    const te::Leaf& inner = st->leaves().back();
    if (!inner.reduce && inner.extent >= 4 && inner.kind == tir::ForKind::Serial) st->vectorize(inner.var);
  }
  return true;
}

}  // namespace kiln::schedule
