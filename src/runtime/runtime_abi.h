// The runtime's exported-symbol table, derived from KILN_BACKEND_API in
// kiln/runtime/backend_api.h (the one list). The linker checks imports against
// it at build time; the loader and the JIT resolve imports from it.
#pragma once

#include <string_view>
#include <vector>

namespace kiln {

struct AbiSymbol {
  const char* name;
  void* address;
  const char* doc;
};

const std::vector<AbiSymbol>& runtime_abi_symbols();
// nullptr when `name` is not exported by the runtime.
const AbiSymbol* find_runtime_symbol(std::string_view name);

}  // namespace kiln
