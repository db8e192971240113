// Exports and imports of a compiled object or shared library, read with
// LLVM's object library (ELF .o and .so; the dynamic symbol table for a .so,
// which is what the loader resolves).
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"

namespace kiln::codegen {
namespace {

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

}  // namespace

ObjectSymbols read_object_symbols(const std::string& path) {
  auto owning = llvm::object::ObjectFile::createObjectFile(path);
  if (!owning)
    throw Error("cannot read '" + path +
                "' as an object file or shared library: " + message(owning.takeError()));
  const llvm::object::ObjectFile& obj = *owning->getBinary();
  ObjectSymbols out;
  out.hexagon = obj.getArch() == llvm::Triple::hexagon;
  auto add = [&](const llvm::object::SymbolRef& sym) {
    auto flags = sym.getFlags();
    if (!flags) return llvm::consumeError(flags.takeError());
    auto name = sym.getName();
    if (!name) return llvm::consumeError(name.takeError());
    if (name->empty()) return;
    if (*flags & llvm::object::SymbolRef::SF_Undefined) {
      out.imports.push_back(name->str());
      return;
    }
    auto type = sym.getType();
    if (!type) return llvm::consumeError(type.takeError());
    if ((*flags & llvm::object::SymbolRef::SF_Global) && *type == llvm::object::SymbolRef::ST_Function)
      out.exports.push_back(name->str());
  };
  const auto* elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(&obj);
  if (elf && elf->getEType() == llvm::ELF::ET_DYN) {
    for (const auto& sym : elf->getDynamicSymbolIterators()) add(sym);
  } else {
    for (const auto& sym : obj.symbols()) add(sym);
  }
  for (auto* v : {&out.exports, &out.imports}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return out;
}

std::optional<ElfHeader> read_elf_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  unsigned char h[20] = {};
  in.read(reinterpret_cast<char*>(h), sizeof h);
  if (in.gcount() < std::streamsize(sizeof h) || h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F')
    return std::nullopt;
  // e_type and e_machine follow the 16-byte e_ident, in the file's byte order.
  bool big_endian = h[5] == 2;
  auto u16 = [&](int at) {
    return big_endian ? uint16_t(h[at] << 8 | h[at + 1]) : uint16_t(h[at] | h[at + 1] << 8);
  };
  return ElfHeader{u16(16), u16(18)};
}

std::string elf_machine_name(uint16_t machine) {
  switch (machine) {
    case llvm::ELF::EM_X86_64:
      return "x86-64";
    case llvm::ELF::EM_386:
      return "x86 (32-bit)";
    case llvm::ELF::EM_HEXAGON:
      return "Hexagon";
    case llvm::ELF::EM_AARCH64:
      return "AArch64";
    case llvm::ELF::EM_ARM:
      return "ARM";
    case llvm::ELF::EM_RISCV:
      return "RISC-V";
    default:
      return "machine " + std::to_string(machine);
  }
}

std::string describe_elf(const ElfHeader& h) {
  const char* kind = h.type == llvm::ELF::ET_REL    ? "an object file"
                     : h.type == llvm::ELF::ET_DYN  ? "a shared library"
                     : h.type == llvm::ELF::ET_EXEC ? "an executable"
                                                    : "an ELF file";
  return std::string(kind) + " for " + elf_machine_name(h.machine) + " (ELF e_machine " +
         std::to_string(h.machine) + ")";
}

std::map<std::string, std::vector<std::string>> undefined_symbol_users(const std::string& path) {
  auto owning = llvm::object::ObjectFile::createObjectFile(path);
  if (!owning) throw Error("cannot read '" + path + "' as an object file: " + message(owning.takeError()));
  const llvm::object::ObjectFile& obj = *owning->getBinary();
  // The defined functions of each section, to find the one a relocation is in.
  struct Function {
    uint64_t begin, end;
    std::string name;
  };
  std::map<uint64_t, std::vector<Function>> functions;  // by section index
  for (const auto& sym : obj.symbols()) {
    auto type = sym.getType();
    auto section = sym.getSection();
    auto name = sym.getName();
    auto value = sym.getValue();
    if (!type || !section || !name || !value) {
      llvm::consumeError(type.takeError());
      llvm::consumeError(section.takeError());
      llvm::consumeError(name.takeError());
      llvm::consumeError(value.takeError());
      continue;
    }
    if (*type != llvm::object::SymbolRef::ST_Function || *section == obj.section_end()) continue;
    uint64_t size = llvm::object::ELFSymbolRef(sym).getSize();
    functions[(*section)->getIndex()].push_back({*value, *value + size, name->str()});
  }
  std::map<std::string, std::vector<std::string>> users;
  for (const auto& section : obj.sections()) {
    auto target = section.getRelocatedSection();
    if (!target) {
      llvm::consumeError(target.takeError());
      continue;
    }
    if (*target == obj.section_end()) continue;
    const std::vector<Function>& in = functions[(*target)->getIndex()];
    for (const auto& reloc : section.relocations()) {
      auto sym = reloc.getSymbol();
      if (sym == obj.symbol_end()) continue;
      auto flags = sym->getFlags();
      auto name = sym->getName();
      if (!flags || !name) {
        llvm::consumeError(flags.takeError());
        llvm::consumeError(name.takeError());
        continue;
      }
      if (!(*flags & llvm::object::SymbolRef::SF_Undefined)) continue;
      std::vector<std::string>& list = users[name->str()];
      for (const Function& f : in)
        if (reloc.getOffset() >= f.begin && reloc.getOffset() < f.end &&
            std::find(list.begin(), list.end(), f.name) == list.end())
          list.push_back(f.name);
    }
  }
  return users;
}

}  // namespace kiln::codegen
