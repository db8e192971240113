// The extension module kiln._kiln; the `kiln` package (python/kiln/) wraps it.
#include "common.h"
#include "kiln/runtime/backend.h"
#include "pattern/registry.h"

PYBIND11_MODULE(_kiln, m) {
  namespace kp = kiln::python;
  m.doc() = "kiln's C++ API; use the kiln package, which wraps it.";
  // Built-in backends first, so Python backends can never take their names.
  kiln::pattern_registry();
  kiln::backend_runtime_names();
  kp::bind_errors(m);
  kp::bind_graph(m);
  kp::bind_runtime(m);
  kp::bind_backends(m);
  kp::bind_te(m);
}
