// The runtime side of the built-in backends (backends/builtin.h), compiled
// into kiln_runtime: their runtime factories, without the compiler.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/builtin.h"
#include "kiln/runtime/backend.h"

#define KILN_DECLARE_RUNTIME(name)                \
  namespace kiln::name {                          \
  std::unique_ptr<BackendRuntime> make_runtime(); \
  }
KILN_FOR_EACH_BUILTIN_BACKEND(KILN_DECLARE_RUNTIME)
#undef KILN_DECLARE_RUNTIME

namespace kiln {

std::vector<std::pair<std::string, BackendRuntimeFactory>> builtin_backend_runtimes() {
  std::vector<std::pair<std::string, BackendRuntimeFactory>> out;
#define KILN_ADD_RUNTIME(name) out.emplace_back(#name, [] { return name::make_runtime(); });
  KILN_FOR_EACH_BUILTIN_BACKEND(KILN_ADD_RUNTIME)
#undef KILN_ADD_RUNTIME
  return out;
}

}  // namespace kiln
