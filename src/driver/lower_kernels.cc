// lower_planned_kernels: one prim function per distinct planned kernel, and
// the host program with each group replaced by a call of its kernel.
#include <set>
#include <sstream>

#include "driver/kernels.h"

namespace kiln::driver {
namespace {

// Two kernels with the same key compute the same function of their inputs.
std::string kernel_key(const lower::KernelSpec& spec) {
  std::ostringstream os;
  for (const auto& p : spec.params) os << desc_str(p) << ";";
  for (const auto& op : spec.ops) {
    os << "|" << op.op << "{";
    for (const auto& [k, v] : op.attrs.items()) os << k << "=" << attr_value_str(v) << ",";
    os << "}";
    for (const auto& s : op.sources) os << "(" << s.param << "," << s.producer << "," << s.output << ")";
    for (const auto& d : op.in) os << desc_str(d);
  }
  for (const auto& [op, out] : spec.outputs) os << "->" << op << "." << out;
  return os.str();
}

}  // namespace

LoweredKernels lower_planned_kernels(const Graph& host, const KernelPlan& plan,
                                     const schedule::CpuTarget& cpu) {
  LoweredKernels out;
  out.host = host;
  out.host.nodes.clear();
  std::map<std::string, std::string> symbol_of;  // key -> symbol
  std::set<std::string> taken;
  std::vector<int> kernel_of(host.nodes.size(), -1);
  for (size_t k = 0; k < plan.kernels.size(); ++k)
    for (size_t n : plan.kernels[k].nodes) kernel_of[n] = int(k);
  for (size_t i = 0; i < host.nodes.size(); ++i) {
    int k = kernel_of[i];
    if (k < 0) {
      out.host.nodes.push_back(host.nodes[i]);
      continue;
    }
    const PlannedKernel& pk = plan.kernels[size_t(k)];
    if (pk.nodes.back() != i) continue;  // the group is emitted at its last node
    std::string key = kernel_key(pk.spec);
    auto it = symbol_of.find(key);
    if (it == symbol_of.end()) {
      lower::KernelSpec spec = pk.spec;
      std::string symbol = "kiln_" + spec.name;
      for (int n = 1; taken.count(symbol); ++n) symbol = "kiln_" + spec.name + "_" + std::to_string(n);
      taken.insert(symbol);
      spec.name = symbol;
      std::string why;
      auto f = lower::lower_kernel(spec, &why, cpu);
      KILN_CHECK(f.has_value(), "lowering kernel ", symbol, ": ", why);
      out.funcs.push_back(*f);
      HostKernel hk;
      hk.symbol = symbol;
      hk.ops.name = symbol;
      for (size_t p = 0; p < pk.params.size(); ++p)
        hk.ops.inputs.push_back({pk.params[p], pk.spec.params[p]});
      for (size_t n : pk.nodes) hk.ops.nodes.push_back(host.nodes[n]);
      for (const auto& o : host.nodes[i].outputs) hk.ops.outputs.push_back(o.name);
      out.kernels.push_back(std::move(hk));
      it = symbol_of.emplace(key, symbol).first;
    }
    GraphNode call;
    call.name = host.nodes[i].name;
    call.kernel = it->second;
    call.inputs = pk.params;
    call.outputs = host.nodes[i].outputs;
    out.host.nodes.push_back(std::move(call));
  }
  return out;
}

}  // namespace kiln::driver
