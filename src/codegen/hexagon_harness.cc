// The Hexagon harness table (runtime/hexagon/harness.h) that build_module
// adds to a Hexagon executable's module: one entry per prim function with its
// packed entry and parameter descriptions, and the VTCM capacity.
#include <string>
#include <vector>

#include "codegen/llvm_internal.h"
#include "runtime/hexagon/harness.h"
#include "tir/tir.h"

namespace kiln::codegen {

using tir::DataType;

namespace {

// The Hexagon harness table (runtime/hexagon/harness.h): one entry per prim
// function with its packed entry and parameter descriptions.
static_assert(int(DataType::Code::Int) == KILN_HX_INT && int(DataType::Code::UInt) == KILN_HX_UINT &&
                  int(DataType::Code::Float) == KILN_HX_FLOAT && int(DataType::Code::Bool) == KILN_HX_BOOL &&
                  int(DataType::Code::Handle) == KILN_HX_HANDLE,
              "harness.h type codes follow tir::DataType::Code");

// A constant global (getOrInsertGlobal rather than `new GlobalVariable`, which
// GCC's -Wmismatched-new-delete misreads).
llvm::GlobalVariable* constant_global(llvm::Module& m, llvm::Constant* init, const std::string& name,
                                      llvm::GlobalValue::LinkageTypes linkage) {
  auto* g = llvm::cast<llvm::GlobalVariable>(m.getOrInsertGlobal(name, init->getType()));
  g->setInitializer(init);
  g->setConstant(true);
  g->setLinkage(linkage);
  return g;
}

llvm::Constant* private_constant(llvm::Module& m, llvm::Constant* init, const std::string& name) {
  auto* g = constant_global(m, init, name, llvm::GlobalValue::PrivateLinkage);
  g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return g;
}

}  // namespace

void add_hexagon_harness(llvm::Module& m, const std::vector<tir::PrimFunc>& funcs, uint64_t vtcm_capacity) {
  llvm::LLVMContext& ctx = m.getContext();
  auto* i8 = llvm::Type::getInt8Ty(ctx);
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* param_ty = llvm::StructType::create(ctx, {ptr, i8, i8, i8, i8, ptr}, "kiln_hx_param");
  auto* entry_ty = llvm::StructType::create(ctx, {ptr, ptr, i32, ptr}, "kiln_hx_entry");
  auto string = [&](const std::string& s, const std::string& name) {
    return private_constant(m, llvm::ConstantDataArray::getString(ctx, s), name);
  };
  std::vector<llvm::Constant*> entries;
  for (const tir::PrimFunc& f : funcs) {
    std::vector<llvm::Constant*> params;
    for (const tir::PrimParam& p : f->params) {
      DataType t = p.buffer ? p.buffer->dtype : p.var->dtype;
      std::vector<uint64_t> shape;
      if (p.buffer) {
        for (const tir::Expr& e : p.buffer->shape) {
          auto* imm = tir::as<tir::IntImmNode>(e);
          if (!imm)
            throw Error("the Hexagon harness needs constant buffer shapes; parameter %" + p.buffer->name +
                        " of @" + f->name + " has a symbolic extent");
          shape.push_back(uint64_t(imm->value));
        }
      }
      std::string prefix = "kiln_hx." + f->name + "." + p.var->name;
      llvm::Constant* shape_ptr =
          shape.empty() ? static_cast<llvm::Constant*>(llvm::ConstantPointerNull::get(ptr))
                        : private_constant(m, llvm::ConstantDataArray::get(ctx, shape), prefix + ".shape");
      const std::string& name = p.buffer ? p.buffer->name : p.var->name;
      params.push_back(llvm::ConstantStruct::get(
          param_ty, {string(name, prefix + ".name"), llvm::ConstantInt::get(i8, uint64_t(t.code)),
                     llvm::ConstantInt::get(i8, t.bits), llvm::ConstantInt::get(i8, p.buffer ? 1 : 0),
                     llvm::ConstantInt::get(i8, shape.size()), shape_ptr}));
    }
    llvm::Constant* params_ptr =
        params.empty()
            ? static_cast<llvm::Constant*>(llvm::ConstantPointerNull::get(ptr))
            : private_constant(
                  m, llvm::ConstantArray::get(llvm::ArrayType::get(param_ty, params.size()), params),
                  "kiln_hx." + f->name + ".params");
    llvm::Function* packed = m.getFunction(f->name + "__packed");
    KILN_ASSERT(packed != nullptr, "codegen: the harness needs the packed entry of every function");
    entries.push_back(
        llvm::ConstantStruct::get(entry_ty, {string(f->name, "kiln_hx." + f->name + ".name"), packed,
                                             llvm::ConstantInt::get(i32, f->params.size()), params_ptr}));
  }
  auto* entries_ty = llvm::ArrayType::get(entry_ty, entries.size());
  constant_global(m, llvm::ConstantArray::get(entries_ty, entries), "kiln_hexagon_entries",
                  llvm::GlobalValue::ExternalLinkage);
  constant_global(m, llvm::ConstantInt::get(i32, entries.size()), "kiln_hexagon_num_entries",
                  llvm::GlobalValue::ExternalLinkage);
  constant_global(m, llvm::ConstantInt::get(i64, vtcm_capacity), "kiln_hexagon_vtcm_capacity",
                  llvm::GlobalValue::ExternalLinkage);
}

}  // namespace kiln::codegen
