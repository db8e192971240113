// Links kiln_runtime alone (no compiler, no LLVM) and runs one op through the
// registry, so the runtime_has_no_llvm test can check what the runtime pulls in.
#include <cstdio>

#include "kiln/runtime/error.h"
#include "op/op.h"

int main() {
  try {
    const kiln::OpDef* relu = kiln::find_op("nn.relu");
    if (!relu) {
      std::fprintf(stderr, "error: nn.relu is not registered\n");
      return 1;
    }
    kiln::Tensor x = kiln::Tensor::from_floats({3}, {-1.0f, 0.5f, 2.0f});
    kiln::Tensor y = kiln::run_op(*relu, {x}, {}).at(0);
    bool ok = y.data<float>()[0] == 0.0f && y.data<float>()[1] == 0.5f && y.data<float>()[2] == 2.0f;
    std::printf("%s\n", ok ? "runtime-only relu: ok" : "runtime-only relu: WRONG VALUES");
    return ok ? 0 : 1;
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
