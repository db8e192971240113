// RunCodegen: each backend's codegen, called once with all of its regions.
//
// Requires: offloaded functions (Codegen attribute) from partitioning.
// Guarantees: every offloaded function has a global_symbol (its name when it
// had none) that no other function shares; each backend named by a Codegen
// attribute has a registered codegen, which produced one artifact per
// symbol. The module attribute "external_symbols" lists the symbols
// ("my_npu_main_0 my_npu_main_1"); the artifacts go to the caller.
//
//   def @my_npu_main_0(...) attrs {Codegen = "my_npu", ...}
//   ==> module attrs {external_symbols = "my_npu_main_0"}
#include <map>

#include "transform/partition.h"

namespace kiln {

CodegenOptions RunCodegenOptions::for_backend(const std::string& name) const {
  CodegenOptions options = global;
  if (auto it = backend.find(name); it != backend.end())
    for (const auto& [k, v] : it->second) options[k] = v;
  return options;
}

Module run_codegen(const Module& m, const RunCodegenOptions& opts,
                   std::map<std::string, BackendArtifacts>* out) {
  Module result = m;
  std::map<std::string, std::string> symbol_owner;
  std::vector<std::string> backends;
  std::map<std::string, std::vector<Function>> by_backend;
  for (const auto& f : m.functions) {
    if (!f->attrs.has("Codegen")) continue;
    const std::string& backend = f->attrs.get_string("Codegen");
    Function g = f;
    if (!f->attrs.has("global_symbol")) {
      auto copy = std::make_shared<FunctionNode>(*f);
      copy->attrs.set("global_symbol", f->name);
      g = copy;
      result.set(g);
    }
    const std::string& symbol = g->attrs.get_string("global_symbol");
    auto [it, fresh] = symbol_owner.emplace(symbol, g->name);
    KILN_CHECK(fresh, "run-codegen: global_symbol '", symbol, "' of @", g->name, " is also the symbol of @",
               it->second, "; offloaded functions need unique symbols");
    if (!by_backend.count(backend)) backends.push_back(backend);
    by_backend[backend].push_back(g);
  }
  std::string symbols;
  for (const auto& backend : backends) {
    const Backend* cg = find_backend(backend);
    KILN_CHECK(cg != nullptr, "run-codegen: no codegen registered for backend '", backend, "' (used by @",
               by_backend[backend][0]->name, ")");
    BackendArtifacts artifacts = cg->codegen(result, by_backend[backend], opts.for_backend(backend));
    for (const auto& f : by_backend[backend]) {
      const std::string& symbol = f->attrs.get_string("global_symbol");
      KILN_CHECK(artifacts.artifacts.count(symbol), "run-codegen: backend ", backend,
                 " produced nothing for ", symbol);
      symbols += (symbols.empty() ? "" : " ") + symbol;
    }
    if (out) (*out)[backend] = std::move(artifacts);
  }
  if (!symbols.empty()) result.attrs.set("external_symbols", symbols);
  return result;
}

}  // namespace kiln
