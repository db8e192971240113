// The ELF linker, ld.lld, run as a library in this process (lld.cc): the
// host's shared objects and Hexagon's static executables are linked without
// starting ld.lld-19, whose start-up (mostly libLLVM's relocations, ~80 ms)
// was a tenth of compiling PP-OCR det. Plain C++ here; lld.cc has LLVM.
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

// Links as `ld.lld args...` would (args without the program name, e.g.
// {"-shared", "-o", "k.so", "k.o"}). A failed link is a kiln::Error naming
// `output` with lld's messages.
void link_with_lld(const std::vector<std::string>& args, const std::string& output);

}  // namespace kiln::codegen
