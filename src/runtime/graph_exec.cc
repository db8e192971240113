// Host execution of kiln.graph with the reference kernels.
#include "runtime/graph_exec.h"

namespace kiln {

double microseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

DispatchEvent host_event(const std::string& node, const std::string& op, double start_us,
                         double duration_us) {
  DispatchEvent e;
  e.backend = "host";
  e.node = node;
  e.op = op;
  e.engine = "CPU";
  e.start_us = start_us;
  e.duration_us = duration_us;
  return e;
}

std::vector<Tensor> execute_graph(const Graph& g, const std::vector<Tensor>& inputs,
                                  const std::map<std::string, Tensor>& constants,
                                  const GraphRunHooks& hooks) {
  KILN_CHECK(inputs.size() == g.inputs.size(), g.name, ": expected ", g.inputs.size(), " input(s), got ",
             inputs.size());
  std::map<std::string, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GraphValue& v = g.inputs[i];
    KILN_CHECK(inputs[i].shape() == v.desc.shape && inputs[i].dtype() == v.desc.dtype, g.name, ": input '",
               v.name, "' must be ", desc_str(v.desc), ", got ",
               desc_str({inputs[i].shape(), inputs[i].dtype()}));
    values[v.name] = inputs[i];
  }
  for (const auto& c : g.constants) {
    auto it = constants.find(c.name);
    KILN_CHECK(it != constants.end(), g.name, ": constant '", c.name, "' is missing from the module");
    KILN_CHECK(it->second.shape() == c.desc.shape && it->second.dtype() == c.desc.dtype, g.name,
               ": constant '", c.name, "' must be ", desc_str(c.desc));
    values[c.name] = it->second;
  }
  for (const auto& n : g.nodes) {
    std::vector<Tensor> ins;
    for (const auto& i : n.inputs) ins.push_back(values.at(i));
    KILN_CHECK(n.callee.empty() && n.kernel.empty(), g.name, ": node ", n.name, " calls ",
               n.callee.empty() ? n.kernel : n.callee, ", which only the VM runs");
    double start = microseconds_since(hooks.start);
    std::vector<Tensor> outs = run_op(*find_op(n.op), ins, n.attrs);
    if (hooks.events)
      hooks.events->push_back(host_event(n.name, n.op, start, microseconds_since(hooks.start) - start));
    KILN_ASSERT(outs.size() == n.outputs.size(), "node " + n.name + " produced the wrong number of outputs");
    for (size_t i = 0; i < outs.size(); ++i) values[n.outputs[i].name] = outs[i];
    if (hooks.observer && !outs.empty()) hooks.observer(n.name, outs[0]);
  }
  std::vector<Tensor> out;
  for (const auto& o : g.outputs) out.push_back(values.at(o));
  return out;
}

}  // namespace kiln
