// Building for Hexagon: checked linking of a static executable (generated
// kernels, the generated harness, kiln's freestanding Hexagon runtime) with
// ld.lld-19, and running it under qemu-hexagon-static.
//
// The link-check rule is the host's: every symbol the kernels need must be
// in the runtime ABI or in an object the user names (--link-lib), and a
// missing one is reported by kiln, by name, before the linker runs. Plain
// C++; no LLVM.
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/process.h"

namespace kiln::codegen {

// The Hexagon runtime object built with kiln (kiln_hexagon_rt.o): the
// KILN_HEXAGON_RUNTIME environment variable, else the build tree's. A
// missing file is an error saying how to build it.
std::string hexagon_runtime_object();

// Where each import resolves for Hexagon: the runtime ABI, the rest of
// kiln's Hexagon runtime (TargetRuntime), a named Hexagon object (Library),
// or nothing.
std::vector<ResolvedImport> resolve_hexagon_imports(const std::vector<Import>& imports,
                                                    const std::vector<std::string>& link_objects);

// The TIR-level check: each extern call resolves (resolve_hexagon_imports);
// throws naming every missing symbol and its callers.
void check_hexagon_imports(const std::vector<Import>& imports, const std::vector<std::string>& link_objects);

// Checks the undefined symbols of `kernel_object` against the runtime and the
// named objects, then links them into the static executable `output`.
void link_hexagon_executable(const std::string& kernel_object, const std::string& output,
                             const std::vector<std::string>& link_objects);

// Runs a Hexagon executable: qemu-hexagon-static -cpu v67 EXE ARGS... (QEMU
// 7.2 names no CPU newer than v67; v68+ code without HVX floating point runs
// on it). Killed after `timeout_seconds`.
ProcessResult run_hexagon_executable(const std::string& exe, const std::vector<std::string>& args,
                                     int timeout_seconds = 300);

}  // namespace kiln::codegen
