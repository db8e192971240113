// Backend runtime registry and dispatch events.
#include "kiln/runtime/backend.h"

#include <mutex>
#include <nlohmann/json.hpp>

#include "backends/example_npu/runtime/npu_runtime.h"
#include "backends/hexagon/runtime/hexagon_runtime.h"

namespace kiln {

namespace {

std::map<std::string, BackendRuntimeFactory>& factories() {
  static std::map<std::string, BackendRuntimeFactory> map;
  return map;
}

void ensure_builtins() {
  static std::once_flag once;
  std::call_once(once, register_builtin_backend_runtimes);
}

}  // namespace

// Writes the map directly: it runs inside ensure_builtins' call_once.
void register_builtin_backend_runtimes() {
  factories()["example_npu"] = [] { return example_npu::make_runtime(); };
  factories()["hexagon"] = [] { return hexagon::make_runtime(); };
}

void register_backend_runtime(const std::string& name, BackendRuntimeFactory factory) {
  ensure_builtins();
  factories()[name] = std::move(factory);
}

void unregister_backend_runtime(const std::string& name) {
  ensure_builtins();
  factories().erase(name);
}

std::unique_ptr<BackendRuntime> make_backend_runtime(const std::string& name) {
  ensure_builtins();
  auto it = factories().find(name);
  return it == factories().end() ? nullptr : it->second();
}

std::vector<std::string> backend_runtime_names() {
  ensure_builtins();
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
