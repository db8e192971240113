// Backend runtime registry and dispatch events.
#include "kiln/runtime/backend.h"

#include <nlohmann/json.hpp>

namespace kiln {

namespace {

// The built-ins are in the map from its first use.
std::map<std::string, BackendRuntimeFactory>& factories() {
  static std::map<std::string, BackendRuntimeFactory> map = [] {
    std::map<std::string, BackendRuntimeFactory> builtins;
    for (auto& [name, factory] : builtin_backend_runtimes()) builtins[name] = std::move(factory);
    return builtins;
  }();
  return map;
}

}  // namespace

void register_backend_runtime(const std::string& name, BackendRuntimeFactory factory) {
  factories()[name] = std::move(factory);
}

void unregister_backend_runtime(const std::string& name) { factories().erase(name); }

std::unique_ptr<BackendRuntime> make_backend_runtime(const std::string& name) {
  auto it = factories().find(name);
  return it == factories().end() ? nullptr : it->second();
}

std::vector<std::string> backend_runtime_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories()) out.push_back(k);
  return out;
}

std::string DispatchEvent::to_json() const {
  nlohmann::json j;
  j["backend"] = backend;
  if (!function.empty()) j["function"] = function;
  j["node"] = node;
  j["op"] = op;
  j["engine"] = engine;
  j["operands"] = nlohmann::json::array();
  for (const auto& o : operands)
    j["operands"].push_back({{"name", o.name}, {"tier", o.tier}, {"bytes", o.bytes}});
  j["tiles"] = tiles;
  j["tile"] = tile;
  j["fused"] = fused;
  j["bytes_per_tier"] = bytes_per_tier;
  j["cycles"] = cycles;
  if (!counters.empty()) j["counters"] = counters;
  j["duration_us"] = duration_us;
  return j.dump();
}

}  // namespace kiln
