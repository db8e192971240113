// The example NPU's codegen: one kiln.graph per offloaded function.
//
// The graph keeps every attribute and the pattern of each fused group, so the
// emulator can plan engines, tiles and fusion from the graph alone. Device
// options (l0, l1, l2, systolic, precision) are validated here so a bad option fails at
// compile time; the runtime reads the same options from its init.
#include "backends/example_npu/codegen.h"

#include "backends/example_npu/runtime/device.h"
#include "backends/graph_codegen.h"

namespace kiln {

BackendArtifacts example_npu_codegen(const Module& m, const std::vector<Function>& functions,
                                     const CodegenOptions& options) {
  example_npu::device_from_options(options);
  BackendArtifacts out;
  GraphLowering state;
  for (const auto& f : functions) {
    std::string symbol = f->attrs.get_string("global_symbol");
    Graph g = lower_to_graph(m, *f, symbol, state);
    for (const auto& n : g.nodes)
      KILN_CHECK(n.callee.empty() && example_npu::engine_for_op(n.op) != nullptr, "example_npu codegen: @",
                 f->name, " contains ", n.op.empty() ? "a call of @" + n.callee : n.op,
                 ", which the device cannot run; only functions partitioned for example_npu can be compiled");
    out.artifacts[symbol] = graph_to_json(g);
  }
  out.constants = std::move(state.constants);
  return out;
}

}  // namespace kiln
