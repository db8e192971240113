// plan_memory: one arena for the host program's intermediate values.
//
// Each value written by a kernel or an offloaded function (the nodes whose
// outputs the VM allocates) lives from the node that writes it to the last
// node that reads it. Values are placed largest first, each at the lowest
// 64-byte aligned offset that overlaps no placed value whose lifetime meets
// its own (greedy by size), so values that are never live together share
// memory. Program outputs are returned to the caller and get their own
// allocation; so do the results of reference kernels, which allocate them.
#include <algorithm>

#include "driver/kernels.h"

namespace kiln::driver {
namespace {

constexpr int64_t kAlignment = 64;

struct Interval {
  std::string name;
  int64_t bytes = 0;
  size_t first = 0, last = 0;
  int64_t offset = -1;
};

}  // namespace

MemoryPlan plan_memory(const Graph& host) {
  std::map<std::string, size_t> index;
  std::vector<Interval> values;
  std::set<std::string> outputs(host.outputs.begin(), host.outputs.end());
  for (size_t i = 0; i < host.nodes.size(); ++i) {
    const GraphNode& n = host.nodes[i];
    for (const auto& in : n.inputs)
      if (auto it = index.find(in); it != index.end()) values[it->second].last = i;
    if (n.kernel.empty() && n.callee.empty()) continue;
    for (const auto& o : n.outputs) {
      if (outputs.count(o.name)) continue;
      int64_t bytes = shape_numel(o.desc.shape) * dtype_bytes(o.desc.dtype);
      index[o.name] = values.size();
      values.push_back({o.name, (bytes + kAlignment - 1) / kAlignment * kAlignment, i, i, -1});
    }
  }
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Largest first; ties in program order (the order is a position list, so
  // std::sort with the position as tie-break is stable).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return values[a].bytes != values[b].bytes ? values[a].bytes > values[b].bytes : a < b;
  });
  MemoryPlan plan;
  std::vector<size_t> placed;
  for (size_t v : order) {
    Interval& cur = values[v];
    // The placed values live at the same time, by offset.
    std::vector<const Interval*> live;
    for (size_t p : placed)
      if (values[p].first <= cur.last && cur.first <= values[p].last) live.push_back(&values[p]);
    std::sort(live.begin(), live.end(),
              [](const Interval* a, const Interval* b) { return a->offset < b->offset; });
    int64_t offset = 0;
    for (const Interval* l : live) {
      if (offset + cur.bytes <= l->offset) break;
      offset = std::max(offset, l->offset + l->bytes);
    }
    cur.offset = offset;
    placed.push_back(v);
    plan.offsets[cur.name] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + cur.bytes);
    plan.intermediate_bytes += cur.bytes;
  }
  return plan;
}

}  // namespace kiln::driver
