// Building for Hexagon: checked linking of a static executable (generated
// kernels, the generated harness, kiln's freestanding Hexagon runtime) with
// ld.lld-19, and running it under qemu-hexagon-static.
//
// The link-check rule is the host's: every symbol the kernels need must be
// in the runtime ABI or in an object the user names (--link-lib), and a
// missing one is reported by kiln, by name, before the linker runs. Plain
// C++; no LLVM.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/process.h"

namespace kiln::codegen {

// The Hexagon runtime object built with kiln (kiln_hexagon_rt.o): the
// KILN_HEXAGON_RUNTIME environment variable, else the build tree's. A
// missing file is an error saying how to build it.
std::string hexagon_runtime_object();

// The ELF header fields the link checks read (host and Hexagon alike):
// e_type (ET_REL 1, ET_EXEC 2, ET_DYN 3) and e_machine (EM_X86_64 62,
// EM_HEXAGON 164, ...). nullopt for a file that is not ELF; an error naming
// the file when it cannot be read.
struct ElfHeader {
  uint16_t type = 0;
  uint16_t machine = 0;
};
inline constexpr uint16_t kElfRelocatable = 1, kElfExecutable = 2, kElfShared = 3;
inline constexpr uint16_t kElfMachineX86_64 = 62, kElfMachineAArch64 = 183, kElfMachineHexagon = 164;
std::optional<ElfHeader> read_elf_header(const std::string& path);
// "x86-64", "Hexagon", "AArch64", ... ("machine N" for others).
std::string elf_machine_name(uint16_t machine);
// "an object file for x86-64 (ELF e_machine 62)"
std::string describe_elf(const ElfHeader& h);

// The undefined symbols of an object file and, for each, the defined
// functions whose code refers to it (from the relocations).
std::map<std::string, std::vector<std::string>> undefined_symbol_users(const std::string& object);

// What a helper that LLVM's Hexagon code generator calls does ("float64
// division" for __hexagon_divdf3), or empty for a symbol it does not add.
std::string hexagon_llvm_helper_purpose(const std::string& symbol);

// The symbols the link of `kernel_object` must resolve: its undefined
// symbols, each with its callers (from `extern_calls`, the prim functions'
// own extern calls, else from the object's relocations).
std::vector<Import> hexagon_object_imports(const std::string& kernel_object,
                                           const std::vector<Import>& extern_calls = {});

// Where each import resolves for Hexagon: the runtime ABI, the rest of
// kiln's Hexagon runtime (TargetRuntime), a named Hexagon object (Library),
// or nothing. Each of `link_objects` must be a Hexagon object file (ELF
// e_machine EM_HEXAGON, ET_REL); anything else is an error naming the file,
// its architecture and what the build expects.
std::vector<ResolvedImport> resolve_hexagon_imports(const std::vector<Import>& imports,
                                                    const std::vector<std::string>& link_objects);

// The TIR-level check: each extern call resolves (resolve_hexagon_imports);
// throws naming every missing symbol and its callers.
void check_hexagon_imports(const std::vector<Import>& imports, const std::vector<std::string>& link_objects);

// Checks the undefined symbols of `kernel_object` against the runtime and the
// named objects, then links them into the static executable `output`. A
// symbol LLVM added that kiln's Hexagon runtime lacks (__hexagon_divdf3 for
// a float64 division) is named with what it is for, before ld.lld runs.
void link_hexagon_executable(const std::string& kernel_object, const std::string& output,
                             const std::vector<std::string>& link_objects);

// Runs a Hexagon executable: qemu-hexagon-static -cpu v67 EXE ARGS... (QEMU
// 7.2 names no CPU newer than v67; v68+ code without HVX floating point runs
// on it). Killed after `timeout_seconds`.
ProcessResult run_hexagon_executable(const std::string& exe, const std::vector<std::string>& args,
                                     int timeout_seconds = 300);

}  // namespace kiln::codegen
