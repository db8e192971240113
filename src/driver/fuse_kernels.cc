// plan_kernels: the host program's ops grouped into fused kernels (see kernels.h).
#include <algorithm>
#include <set>

#include "driver/kernels.h"

namespace kiln::driver {
namespace {

using lower::OpPattern;

struct Group {
  std::vector<size_t> nodes;
  bool has_anchor = false;  // an anchor or a reduction: no second one joins
  bool opaque = false;      // fuses with nothing
  size_t tail = 0;          // the last node: its outputs are the group's
};

// Whether an op of pattern `p` may join `g` after g's tail.
bool may_join(const Group& g, OpPattern p) {
  if (g.opaque || p == OpPattern::Opaque) return false;
  if (p == OpPattern::Injective) return true;
  // A reduction takes an injective prologue; an anchor takes none (its
  // reduction would recompute the prologue for every tap).
  return p == OpPattern::Reduction && !g.has_anchor;
}

std::string short_name(const std::string& op) {
  size_t dot = op.find('.');
  return dot == std::string::npos ? op : op.substr(dot + 1);
}

}  // namespace

KernelPlan plan_kernels(const Graph& host, const schedule::CpuTarget& cpu) {
  KernelPlan plan;
  std::map<std::string, size_t> producer;  // value -> node
  std::map<std::string, int> uses;
  // Uses by distinct nodes: multiply(s, s) is one use of s.
  for (const auto& n : host.nodes) {
    std::set<std::string> read(n.inputs.begin(), n.inputs.end());
    for (const auto& i : read) ++uses[i];
  }
  for (const auto& o : host.outputs) uses[o] += 2;  // a program output is never fused away
  std::vector<Group> groups;
  std::vector<int> group_of(host.nodes.size(), -1);
  // What the specs need of each lowered node.
  struct Lowerable {
    std::vector<TensorDesc> in;
    Attrs attrs;
  };
  std::vector<Lowerable> lowerable(host.nodes.size());
  for (size_t i = 0; i < host.nodes.size(); ++i) {
    const GraphNode& n = host.nodes[i];
    for (const auto& o : n.outputs) producer[o.name] = i;
    if (!n.callee.empty() || !n.kernel.empty()) continue;
    std::vector<TensorDesc> in, out;
    for (const auto& o : n.outputs) out.push_back(o.desc);
    // Input types: from the producing node, the program's inputs or constants.
    for (const auto& v : n.inputs) {
      bool found = false;
      if (auto it = producer.find(v); it != producer.end())
        for (const auto& o : host.nodes[it->second].outputs)
          if (o.name == v) in.push_back(o.desc), found = true;
      if (!found)
        for (const auto* list : {&host.inputs, &host.constants})
          for (const auto& gv : *list)
            if (gv.name == v && !found) in.push_back(gv.desc), found = true;
      KILN_ASSERT(found, "plan_kernels: value " + v + " has no type");
    }
    const OpDef* def = find_op(n.op);
    KILN_ASSERT(def != nullptr, "plan_kernels: unknown op " + n.op);
    Attrs attrs = normalize_attrs(*def, n.attrs);
    // A value whose extent is known only at run time (a bounded dynamic
    // axis) stays with the reference kernels, which see actual shapes.
    std::optional<std::string> why;
    if (any_bounded(in) || any_bounded(out))
      why = "dynamic shape (a bounded dynamic leading axis, known only at run time)";
    else
      why = lower::why_not_lowered(n.op, in, out, attrs, cpu);
    if (why) {
      auto& entry = plan.reference_ops[n.op];
      ++entry.first;
      if (entry.second.empty()) entry.second = *why;
      continue;
    }
    ++plan.lowered_ops;
    OpPattern p = lower::pattern_of(n.op, in);
    lowerable[i] = {std::move(in), std::move(attrs)};
    // The groups this node may join: those ending in the producer of one of
    // its inputs, read by this node alone.
    std::vector<int> candidates;
    for (const auto& v : n.inputs) {
      auto it = producer.find(v);
      if (it == producer.end() || uses[v] != 1) continue;
      int g = group_of[it->second];
      if (g < 0 || groups[size_t(g)].tail != it->second) continue;
      if (host.nodes[it->second].outputs.size() != 1 || !may_join(groups[size_t(g)], p)) continue;
      if (std::find(candidates.begin(), candidates.end(), g) == candidates.end()) candidates.push_back(g);
    }
    // It joins one (a group with an anchor or a reduction before others);
    // an injective node also takes in the other groups of injective ops
    // only (an upsampling beside the elementwise ops both feed an add: one
    // kernel, the upsampled image never stored), as long as the merged
    // group holds one anchor or reduction at most.
    int joined = -1;
    for (int g : candidates)
      if (joined < 0 || (groups[size_t(g)].has_anchor && !groups[size_t(joined)].has_anchor)) joined = g;
    if (joined < 0) {
      groups.push_back({});
      joined = int(groups.size() - 1);
    }
    if (p == OpPattern::Injective)
      for (int g : candidates) {
        Group& other = groups[size_t(g)];
        if (g == joined || other.has_anchor || other.opaque) continue;
        for (size_t m : other.nodes) group_of[m] = joined;
        Group& into = groups[size_t(joined)];
        into.nodes.insert(into.nodes.end(), other.nodes.begin(), other.nodes.end());
        other = Group{};
        other.opaque = true;  // emptied: nothing joins it again
      }
    Group& g = groups[size_t(joined)];
    g.nodes.push_back(i);
    g.tail = i;
    g.has_anchor = g.has_anchor || p == OpPattern::Anchor || p == OpPattern::Reduction;
    g.opaque = g.opaque || p == OpPattern::Opaque;
    group_of[i] = joined;
  }
  // The kernels: each group's ops in program order (producers first).
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    std::vector<size_t> nodes = groups[gi].nodes;
    if (nodes.empty()) continue;
    std::sort(nodes.begin(), nodes.end());
    PlannedKernel& k = plan.kernels.emplace_back();
    for (size_t i : nodes) {
      const GraphNode& n = host.nodes[i];
      k.nodes.push_back(i);
      lower::KernelOp op{n.op, lowerable[i].attrs, lowerable[i].in, {}, {}};
      for (const auto& o : n.outputs) op.out.push_back(o.desc);
      for (const auto& v : n.inputs) {
        lower::KernelOp::Source s;
        auto it = producer.find(v);
        bool internal = it != producer.end() && group_of[it->second] == int(gi) && it->second != i;
        if (internal) {
          for (size_t pos = 0; pos < k.nodes.size(); ++pos)
            if (k.nodes[pos] == it->second) s.producer = int(pos);
          const auto& outs = host.nodes[it->second].outputs;
          for (size_t o = 0; o < outs.size(); ++o)
            if (outs[o].name == v) s.output = int(o);
        } else {
          size_t pos = 0;
          while (pos < k.params.size() && k.params[pos] != v) ++pos;
          if (pos == k.params.size()) {
            k.params.push_back(v);
            k.spec.params.push_back(lowerable[i].in[op.sources.size()]);
          }
          s.param = int(pos);
        }
        op.sources.push_back(s);
      }
      k.spec.ops.push_back(std::move(op));
    }
    const GraphNode& tail = host.nodes[k.nodes.back()];
    for (size_t o = 0; o < tail.outputs.size(); ++o)
      k.spec.outputs.push_back({int(k.nodes.size() - 1), int(o)});
    std::string name = k.nodes.size() > 1 ? "fused" : "";
    for (size_t idx : k.nodes) name += (name.empty() ? "" : "_") + short_name(host.nodes[idx].op);
    k.spec.name = name;
  }
  return plan;
}

}  // namespace kiln::driver
