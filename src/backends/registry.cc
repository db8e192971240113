// The one place where built-in backends are registered.
#include "backends/registry.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "pattern/registry.h"
#include "transform/partition.h"

namespace kiln {

static std::vector<BackendCodegen>& codegens() {
  static std::vector<BackendCodegen> list;
  return list;
}

void register_backend_codegen(BackendCodegen codegen) {
  KILN_CHECK(!codegen.backend.empty() && codegen.codegen, "backend codegen needs a name and a function");
  for (auto& c : codegens()) {
    if (c.backend != codegen.backend) continue;
    c = std::move(codegen);
    return;
  }
  codegens().push_back(std::move(codegen));
}

const BackendCodegen* find_backend_codegen(const std::string& backend) {
  // Backends register on first use of the pattern registry.
  pattern_registry();
  for (const auto& c : codegens())
    if (c.backend == backend) return &c;
  return nullptr;
}

void remove_backend_codegen(const std::string& backend) {
  std::erase_if(codegens(), [&](const BackendCodegen& c) { return c.backend == backend; });
}

std::string registered_backends() {
  std::string names;
  for (const auto& b : pattern_registry().backends()) names += (names.empty() ? "" : ", ") + b;
  return names;
}

void add_codegen_option(RunCodegenOptions& o, const std::string& key, const std::string& value,
                        const std::vector<std::string>& backends, const std::string& flag,
                        const std::string& not_given) {
  size_t dot = key.find('.');
  if (dot == std::string::npos) {
    o.global[key] = value;
    return;
  }
  // The keys are the backend's to check (check_codegen_options); a backend
  // name that matches none would otherwise be ignored without a word.
  std::string backend = key.substr(0, dot);
  if (pattern_registry().for_backend(backend).empty())
    throw Error(flag + ": unknown backend '" + backend + "' (registered: " + registered_backends() + ")");
  if (std::find(backends.begin(), backends.end(), backend) == backends.end())
    throw Error(flag + ": " + backend + " " + not_given);
  o.backend[backend][key.substr(dot + 1)] = value;
}

void check_codegen_options(const RunCodegenOptions& o, const std::vector<std::string>& backends) {
  for (const auto& b : backends)
    if (const BackendCodegen* c = find_backend_codegen(b); c && c->check_options)
      c->check_options(o.for_backend(b));
}

void register_all_backends(PatternRegistry& patterns) {
  register_example_npu(patterns);
  register_hexagon(patterns);
}

}  // namespace kiln
