// Exports and imports of a compiled object or shared library, read with
// LLVM's object library (ELF .o and .so; the dynamic symbol table for a .so,
// which is what the loader resolves).
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>

#include "codegen/codegen.h"

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

}  // namespace kiln::codegen
