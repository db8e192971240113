// The C++ runtime headers of an installed kiln: a tensor's views and dtype
// names, checked by value.
#include <kiln/runtime/error.h>
#include <kiln/runtime/tensor.h>

#include <cstdio>

int main() {
  kiln::Tensor t = kiln::Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  kiln::Tensor row = t.slice_outer(1, 2).reshape({3});
  bool ok = row.numel() == 3 && row.data<float>()[2] == 6.0f && kiln::dtype_name(t.dtype()) == "float32";
  try {
    (void)t.reshape({4});
    ok = false;  // numel differs: must throw
  } catch (const kiln::Error& e) {
    std::printf("reshape refused: %s\n", e.what());
  }
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
