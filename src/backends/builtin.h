// The built-in backends, listed once.
//
// Each entry X(name) is a folder src/backends/<name>/ whose patterns.cc
// defines `Backend kiln::<name>::backend()` (compiler side) and whose runtime
// defines `std::unique_ptr<BackendRuntime> kiln::<name>::make_runtime()`.
// The compiler's registry (backends/registry.cc) and the runtime library
// (backends/builtin_runtimes.cc) both expand this list, so adding a backend
// is one line here and neither the runtime nor the passes name it. The order
// is the claim order on equal priorities when no --backend is given.
#pragma once

#define KILN_FOR_EACH_BUILTIN_BACKEND(X) \
  X(example_npu)                         \
  X(hexagon)
