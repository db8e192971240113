// From a partitioned module to an Executable.
#include "driver/build.h"

#include "backends/graph_codegen.h"
#include "backends/registry.h"

namespace kiln {

Executable build_executable(const Module& partitioned, const std::string& entry,
                            const RunCodegenOptions& codegen, std::vector<std::string>* notes) {
  const FunctionNode* main = partitioned.find(entry);
  KILN_CHECK(main != nullptr, "build: the module has no function @", entry);
  std::map<std::string, BackendArtifacts> artifacts;
  Module m = run_codegen(partitioned, codegen, &artifacts);
  Executable exe;
  GraphLowering state;
  exe.host = lower_to_graph(m, *m.find(entry), entry, state);
  // Each backend's reference graphs are lowered as its codegen lowered them
  // (one naming state per backend, functions in module order), so unnamed
  // constants get the same names.
  std::map<std::string, GraphLowering> graphs_of;
  // Backends in the order their first function appears in the module.
  for (const auto& f : m.functions) {
    if (!f->attrs.has("Codegen")) continue;
    const std::string& backend = f->attrs.get_string("Codegen");
    BackendPart* part = nullptr;
    for (auto& p : exe.backends)
      if (p.backend == backend) part = &p;
    if (!part) {
      exe.backends.push_back({backend, {}, {}, {}});
      part = &exe.backends.back();
      if (const Backend* b = find_backend(backend)) part->version = b->version;
      part->options = codegen.global;
      if (auto it = codegen.backend.find(backend); it != codegen.backend.end())
        for (const auto& [k, v] : it->second) part->options[k] = v;
    }
    const std::string& symbol = f->attrs.get_string("global_symbol");
    // The reference graph for --verify, unless the artifact is that graph.
    std::string graph = graph_to_json(lower_to_graph(m, *f, symbol, graphs_of[backend]));
    const std::string& artifact = artifacts.at(backend).artifacts.at(symbol);
    part->functions.push_back({symbol, artifact, graph == artifact ? "" : graph});
  }
  auto add_constant = [&](const std::string& name, const Tensor& t) {
    auto [it, fresh] = exe.constants.emplace(name, t);
    KILN_CHECK(fresh || it->second.bitwise_equal(t), "build: two different constants are named '", name, "'");
  };
  exe.constants = state.constants;
  for (auto& [backend, g] : graphs_of)
    for (auto& [name, t] : g.constants) add_constant(name, t);
  for (auto& [backend, a] : artifacts)
    for (auto& [name, t] : a.constants) add_constant(name, t);
  if (notes)
    for (const auto& part : exe.backends)
      for (const auto& n : artifacts.at(part.backend).notes) notes->push_back(part.backend + ": " + n);
  // Constants a codegen made that no graph reads (a DSP executable) go to its init by name.
  for (auto& part : exe.backends)
    for (const auto& [name, t] : artifacts.at(part.backend).constants)
      if (!graphs_of[part.backend].constants.count(name)) part.constants.push_back(name);
  return exe;
}

}  // namespace kiln
