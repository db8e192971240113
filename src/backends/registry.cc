// The one place where built-in backends are registered.
#include "backends/registry.h"

#include <memory>
#include <mutex>

#include "pattern/registry.h"

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

void register_all_backends(PatternRegistry& patterns) { register_example_npu(patterns); }

}  // namespace kiln
