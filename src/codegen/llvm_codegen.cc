// LLVM codegen for lowered prim functions: IR building, optimisation for the
// host CPU, text/object/shared-library output and the ORC JIT.
//
// One translation unit on purpose: LLVM headers are slow to compile.
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "codegen/codegen.h"
#include "kiln/runtime/backend_api.h"
#include "tir/text.h"

namespace kiln::codegen {

namespace {

using tir::DataType;

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::unique_ptr<llvm::TargetMachine> host_target_machine(int opt_level) {
  init_llvm();
  std::string triple = llvm::sys::getProcessTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw Error("LLVM has no target for the host (" + triple + "): " + err);
  std::string features;
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
  llvm::TargetOptions options;
  auto level = opt_level >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : opt_level == 0 ? llvm::CodeGenOptLevel::None
                                : llvm::CodeGenOptLevel::Default;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features, options, llvm::Reloc::PIC_, std::nullopt, level));
}

// ---------------------------------------------------------------- IR building

class FunctionBuilder {
 public:
  FunctionBuilder(llvm::Module& m, const tir::PrimFuncNode& f)
      : ctx_(m.getContext()), mod_(m), b_(m.getContext()), f_(f) {}

  void build() {
    std::vector<llvm::Type*> params;
    for (const tir::PrimParam& p : f_.params) params.push_back(type(p.var->dtype));
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), params, false);
    if (mod_.getFunction(f_.name))
      throw Error("prim function @" + f_.name + " is defined twice in one module");
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f_.name, mod_);
    for (size_t i = 0; i < f_.params.size(); ++i) {
      llvm::Argument* a = fn_->getArg(unsigned(i));
      a->setName(f_.params[i].var->name);
      if (f_.params[i].buffer) a->addAttr(llvm::Attribute::NoAlias);
      vars_[f_.params[i].var.get()] = a;
    }
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_);
    stmt(f_.body);
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateRet(b_.getInt32(0));
    build_packed(fty);
  }

 private:
  // ------------------------------------------------------------ types

  llvm::Type* scalar_type(DataType t) {
    switch (t.code) {
      case DataType::Code::Int:
      case DataType::Code::UInt: return b_.getIntNTy(t.bits);
      case DataType::Code::Float:
        if (t.bits == 16) return b_.getHalfTy();
        if (t.bits == 32) return b_.getFloatTy();
        return b_.getDoubleTy();
      case DataType::Code::Bool: return b_.getInt1Ty();
      case DataType::Code::Handle: return b_.getPtrTy();
    }
    return nullptr;
  }
  llvm::Type* type(DataType t) {
    llvm::Type* s = scalar_type(t.element());
    return t.lanes > 1 ? llvm::FixedVectorType::get(s, t.lanes) : s;
  }
  // Bools are bytes in memory.
  llvm::Type* memory_type(DataType t) {
    return t.is_bool() ? (t.lanes > 1 ? llvm::FixedVectorType::get(b_.getInt8Ty(), t.lanes)
                                      : static_cast<llvm::Type*>(b_.getInt8Ty()))
                       : type(t);
  }

  // ------------------------------------------------------------ expressions

  llvm::Value* expr(const tir::Expr& e) {
    using tir::ExprKind;
    switch (e->kind) {
      case ExprKind::IntImm: {
        auto& n = static_cast<const tir::IntImmNode&>(*e);
        return llvm::ConstantInt::get(type(n.dtype), uint64_t(n.value), n.dtype.is_int());
      }
      case ExprKind::FloatImm:
        return llvm::ConstantFP::get(type(e->dtype), static_cast<const tir::FloatImmNode&>(*e).value);
      case ExprKind::StringImm:
        return b_.CreateGlobalString(static_cast<const tir::StringImmNode&>(*e).value);
      case ExprKind::Var: {
        auto it = vars_.find(static_cast<const tir::VarNode*>(e.get()));
        KILN_ASSERT(it != vars_.end(), "codegen: variable without a value (the verifier should reject it)");
        return it->second;
      }
      case ExprKind::Binary: return binary(static_cast<const tir::BinaryNode&>(*e));
      case ExprKind::Not: return b_.CreateNot(expr(static_cast<const tir::NotNode&>(*e).a));
      case ExprKind::Cast: return cast(static_cast<const tir::CastNode&>(*e));
      case ExprKind::Select: {
        auto& n = static_cast<const tir::SelectNode&>(*e);
        return b_.CreateSelect(expr(n.cond), expr(n.true_value), expr(n.false_value));
      }
      case ExprKind::BufferLoad: {
        auto& n = static_cast<const tir::BufferLoadNode&>(*e);
        return load(n);
      }
      case ExprKind::Call: return call(static_cast<const tir::CallNode&>(*e));
      case ExprKind::Ramp: {
        auto& n = static_cast<const tir::RampNode&>(*e);
        llvm::Value* base = b_.CreateVectorSplat(n.lanes, expr(n.base));
        llvm::Value* stride = b_.CreateVectorSplat(n.lanes, expr(n.stride));
        std::vector<llvm::Constant*> steps;
        for (int i = 0; i < n.lanes; ++i)
          steps.push_back(llvm::ConstantInt::get(scalar_type(n.base->dtype), i));
        return b_.CreateAdd(base, b_.CreateMul(stride, llvm::ConstantVector::get(steps)));
      }
      case ExprKind::Broadcast: {
        auto& n = static_cast<const tir::BroadcastNode&>(*e);
        return b_.CreateVectorSplat(n.lanes, expr(n.value));
      }
    }
    return nullptr;
  }

  llvm::Value* binary(const tir::BinaryNode& n) {
    using tir::BinaryOp;
    llvm::Value* a = expr(n.a);
    llvm::Value* c = expr(n.b);
    DataType t = n.a->dtype;
    bool f = t.is_float(), s = t.is_int();
    switch (n.op) {
      case BinaryOp::Add: return f ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
      case BinaryOp::Sub: return f ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
      case BinaryOp::Mul: return f ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
      case BinaryOp::Div: return f ? b_.CreateFDiv(a, c) : s ? b_.CreateSDiv(a, c) : b_.CreateUDiv(a, c);
      case BinaryOp::Mod: return f ? b_.CreateFRem(a, c) : s ? b_.CreateSRem(a, c) : b_.CreateURem(a, c);
      case BinaryOp::Min:
        return b_.CreateSelect(f ? b_.CreateFCmpOLT(a, c) : s ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c), a, c);
      case BinaryOp::Max:
        return b_.CreateSelect(f ? b_.CreateFCmpOGT(a, c) : s ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c), a, c);
      case BinaryOp::EQ: return f ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
      case BinaryOp::NE: return f ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
      case BinaryOp::LT: return f ? b_.CreateFCmpOLT(a, c) : s ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c);
      case BinaryOp::LE: return f ? b_.CreateFCmpOLE(a, c) : s ? b_.CreateICmpSLE(a, c) : b_.CreateICmpULE(a, c);
      case BinaryOp::GT: return f ? b_.CreateFCmpOGT(a, c) : s ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c);
      case BinaryOp::GE: return f ? b_.CreateFCmpOGE(a, c) : s ? b_.CreateICmpSGE(a, c) : b_.CreateICmpUGE(a, c);
      case BinaryOp::And: return b_.CreateAnd(a, c);
      case BinaryOp::Or: return b_.CreateOr(a, c);
    }
    return nullptr;
  }

  llvm::Value* cast(const tir::CastNode& n) {
    llvm::Value* v = expr(n.value);
    DataType from = n.value->dtype, to = n.dtype;
    llvm::Type* ty = type(to);
    if (to.is_bool()) {
      if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
      return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    if (from.is_bool()) return to.is_float() ? b_.CreateUIToFP(v, ty) : b_.CreateZExt(v, ty);
    if (from.is_float() && to.is_float()) return b_.CreateFPCast(v, ty);
    if (from.is_float()) return to.is_int() ? b_.CreateFPToSI(v, ty) : b_.CreateFPToUI(v, ty);
    if (to.is_float()) return from.is_int() ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
    return b_.CreateIntCast(v, ty, from.is_int());
  }

  llvm::Value* buffer_base(const tir::Buffer& buf) {
    auto it = vars_.find(buf->data.get());
    KILN_ASSERT(it != vars_.end(), "codegen: buffer without data");
    return it->second;
  }

  const tir::Expr& flat_index(const tir::Buffer& buf, const std::vector<tir::Expr>& idx) {
    if (idx.size() != 1)
      throw Error("codegen: buffer %" + buf->name + " is indexed with " + std::to_string(idx.size()) +
                  " indices; run flatten-buffers first");
    return idx[0];
  }

  // A contiguous vector access: the index is ramp(base, 1, lanes).
  const tir::RampNode* dense_ramp(const tir::Expr& index) {
    auto* r = tir::as<tir::RampNode>(index);
    return r && tir::is_const_int(r->stride, 1) ? r : nullptr;
  }

  llvm::Align elem_align(const tir::BufferNode& b) {
    return llvm::Align(uint64_t(std::max<int64_t>(1, b.dtype.element().bytes())));
  }

  llvm::Value* to_register(llvm::Value* v, DataType t) {
    return t.is_bool() ? b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v;
  }
  llvm::Value* to_memory(llvm::Value* v, DataType t) {
    return t.is_bool() ? b_.CreateZExt(v, memory_type(t)) : v;
  }

  llvm::Value* load(const tir::BufferLoadNode& n) {
    const tir::Expr& index = flat_index(n.buffer, n.indices);
    llvm::Value* base = buffer_base(n.buffer);
    llvm::Type* elem = memory_type(n.buffer->dtype.element());
    if (n.dtype.lanes == 1) {
      llvm::Value* p = b_.CreateInBoundsGEP(elem, base, expr(index));
      return to_register(b_.CreateAlignedLoad(elem, p, elem_align(*n.buffer)), n.dtype);
    }
    if (auto* r = dense_ramp(index)) {
      llvm::Value* p = b_.CreateInBoundsGEP(elem, base, expr(r->base));
      return to_register(b_.CreateAlignedLoad(memory_type(n.dtype), p, elem_align(*n.buffer)), n.dtype);
    }
    // A gather, one lane at a time.
    llvm::Value* idx = expr(index);
    llvm::Value* out = llvm::PoisonValue::get(memory_type(n.dtype));
    for (int i = 0; i < n.dtype.lanes; ++i) {
      llvm::Value* p = b_.CreateInBoundsGEP(elem, base, b_.CreateExtractElement(idx, uint64_t(i)));
      out = b_.CreateInsertElement(out, b_.CreateAlignedLoad(elem, p, elem_align(*n.buffer)), uint64_t(i));
    }
    return to_register(out, n.dtype);
  }

  void store(const tir::BufferStoreNode& n) {
    const tir::Expr& index = flat_index(n.buffer, n.indices);
    llvm::Value* base = buffer_base(n.buffer);
    llvm::Type* elem = memory_type(n.buffer->dtype.element());
    llvm::Value* v = to_memory(expr(n.value), n.value->dtype);
    if (n.value->dtype.lanes == 1) {
      b_.CreateAlignedStore(v, b_.CreateInBoundsGEP(elem, base, expr(index)), elem_align(*n.buffer));
      return;
    }
    if (auto* r = dense_ramp(index)) {
      b_.CreateAlignedStore(v, b_.CreateInBoundsGEP(elem, base, expr(r->base)), elem_align(*n.buffer));
      return;
    }
    llvm::Value* idx = expr(index);
    for (int i = 0; i < n.value->dtype.lanes; ++i) {
      llvm::Value* p = b_.CreateInBoundsGEP(elem, base, b_.CreateExtractElement(idx, uint64_t(i)));
      b_.CreateAlignedStore(b_.CreateExtractElement(v, uint64_t(i)), p, elem_align(*n.buffer));
    }
  }

  llvm::Value* call(const tir::CallNode& n) {
    std::vector<llvm::Value*> args;
    for (const tir::Expr& a : n.args) args.push_back(expr(a));
    if (n.call_kind == tir::CallKind::Extern) {
      std::vector<llvm::Type*> types;
      for (llvm::Value* a : args) types.push_back(a->getType());
      // bool results cross the C boundary as int8 (C's bool is a byte).
      llvm::Type* ret = n.dtype.is_bool() ? b_.getInt8Ty() : type(n.dtype);
      auto* fty = llvm::FunctionType::get(ret, types, false);
      llvm::Function* callee = mod_.getFunction(n.name);
      if (callee && callee->getFunctionType() != fty)
        throw Error("extern function '" + n.name + "' is called with two different signatures in @" + f_.name);
      if (!callee) callee = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, n.name, mod_);
      llvm::Value* r = b_.CreateCall(callee, args);
      return n.dtype.is_bool() ? to_register(r, n.dtype) : r;
    }
    auto intrinsic = tir::intrinsic_from_name(n.name);
    KILN_ASSERT(intrinsic.has_value(), "codegen: unknown intrinsic");
    DataType t = n.args[0]->dtype;
    switch (*intrinsic) {
      case tir::Intrinsic::IsNull: return b_.CreateIsNull(args[0]);
      case tir::Intrinsic::Abs:
        if (t.is_float()) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args[0]);
        if (t.is_uint()) return args[0];
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, args[0], b_.getFalse());
      case tir::Intrinsic::Sqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, args[0]);
      case tir::Intrinsic::Exp: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, args[0]);
      case tir::Intrinsic::Likely:
        return b_.CreateIntrinsic(llvm::Intrinsic::expect, {args[0]->getType()}, {args[0], b_.getTrue()});
      case tir::Intrinsic::AddressOffset: return b_.CreateGEP(b_.getInt8Ty(), args[0], args[1]);
    }
    return nullptr;
  }

  // ------------------------------------------------------------ statements

  void stmt(const tir::Stmt& s) {
    using tir::StmtKind;
    switch (s->kind) {
      case StmtKind::For: return loop(static_cast<const tir::ForNode&>(*s));
      case StmtKind::Allocate: {
        auto& n = static_cast<const tir::AllocateNode&>(*s);
        if (tir::is_scratchpad(n.buffer->scope))
          throw Error("codegen: scratchpad buffer %" + n.buffer->name + " in @" + f_.name +
                      " is not lowered; run lower-scratchpad-alloc first");
        const tir::BufferNode& b = *n.buffer;
        llvm::Value* count = b_.getInt64(1);
        for (const tir::Expr& e : b.shape) count = b_.CreateMul(count, b_.CreateIntCast(expr(e), b_.getInt64Ty(), true));
        llvm::AllocaInst* a;
        if (llvm::isa<llvm::Constant>(count)) {
          // Constant sizes live in the entry block, so loops do not grow the stack.
          llvm::IRBuilder<> eb(entry_, entry_->begin());
          a = eb.CreateAlloca(memory_type(b.dtype), count, b.name);
        } else {
          a = b_.CreateAlloca(memory_type(b.dtype), count, b.name);
        }
        a->setAlignment(llvm::Align(uint64_t(b.alignment)));
        vars_[b.data.get()] = a;
        return stmt(n.body);
      }
      case StmtKind::DeclBuffer: return stmt(static_cast<const tir::DeclBufferNode&>(*s).body);
      case StmtKind::BufferStore: return store(static_cast<const tir::BufferStoreNode&>(*s));
      case StmtKind::LetStmt: {
        auto& n = static_cast<const tir::LetStmtNode&>(*s);
        llvm::Value* v = expr(n.value);
        v->setName(n.var->name);
        vars_[n.var.get()] = v;
        return stmt(n.body);
      }
      case StmtKind::IfThenElse: {
        auto& n = static_cast<const tir::IfThenElseNode&>(*s);
        llvm::Value* c = expr(n.cond);
        auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
        auto* else_bb = n.else_case ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
        auto* done = llvm::BasicBlock::Create(ctx_, "endif", fn_);
        b_.CreateCondBr(c, then_bb, else_bb ? else_bb : done);
        b_.SetInsertPoint(then_bb);
        stmt(n.then_case);
        if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
        if (else_bb) {
          b_.SetInsertPoint(else_bb);
          stmt(n.else_case);
          if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
        }
        b_.SetInsertPoint(done);
        return;
      }
      case StmtKind::Seq:
        for (const tir::Stmt& c : static_cast<const tir::SeqNode&>(*s).stmts) stmt(c);
        return;
      case StmtKind::Evaluate: expr(static_cast<const tir::EvaluateNode&>(*s).value); return;
      case StmtKind::Return: {
        b_.CreateRet(expr(static_cast<const tir::ReturnNode&>(*s).value));
        // Code after a return is unreachable; give it a block of its own.
        b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "after_return", fn_));
        return;
      }
    }
  }

  void loop(const tir::ForNode& n) {
    // Parallel loops run serially on the host for now (one thread); vectorized
    // and unrolled loops carry LLVM loop hints.
    llvm::Value* min = expr(n.min);
    llvm::Value* end = b_.CreateAdd(min, expr(n.extent));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "for_" + n.var->name, fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "body_" + n.var->name, fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "end_" + n.var->name, fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(min->getType(), 2, n.var->name);
    i->addIncoming(min, pre);
    llvm::Value* cond = n.var->dtype.is_int() ? b_.CreateICmpSLT(i, end) : b_.CreateICmpULT(i, end);
    b_.CreateCondBr(cond, body, done);
    b_.SetInsertPoint(body);
    vars_[n.var.get()] = i;
    stmt(n.body);
    if (!b_.GetInsertBlock()->getTerminator()) {
      llvm::Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(min->getType(), 1));
      i->addIncoming(next, b_.GetInsertBlock());
      llvm::BranchInst* br = b_.CreateBr(head);
      if (n.for_kind == tir::ForKind::Vectorized || n.for_kind == tir::ForKind::Unrolled) {
        const char* hint = n.for_kind == tir::ForKind::Vectorized ? "llvm.loop.vectorize.enable"
                                                                   : "llvm.loop.unroll.full";
        llvm::SmallVector<llvm::Metadata*, 2> ops = {nullptr};
        if (n.for_kind == tir::ForKind::Vectorized)
          ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, hint),
                                                 llvm::ConstantAsMetadata::get(b_.getTrue())}));
        else
          ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, hint)}));
        llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
        md->replaceOperandWith(0, md);
        br->setMetadata(llvm::LLVMContext::MD_loop, md);
      }
    }
    b_.SetInsertPoint(done);
  }

  // f__packed(void** args): unpacks and calls f.
  void build_packed(llvm::FunctionType* fty) {
    auto* pty = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy()}, false);
    auto* packed = llvm::Function::Create(pty, llvm::Function::ExternalLinkage, f_.name + "__packed", mod_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", packed));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < f_.params.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), packed->getArg(0), i);
      llvm::Value* p = b_.CreateLoad(b_.getPtrTy(), slot);
      const tir::PrimParam& param = f_.params[i];
      if (param.buffer || param.var->dtype.is_handle()) {
        args.push_back(p);
      } else {
        llvm::Value* v = b_.CreateLoad(memory_type(param.var->dtype), p);
        args.push_back(to_register(v, param.var->dtype));
      }
    }
    b_.CreateRet(b_.CreateCall(fty, fn_, args));
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  llvm::IRBuilder<> b_;
  const tir::PrimFuncNode& f_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::unordered_map<const tir::VarNode*, llvm::Value*> vars_;
};

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  if (opt_level <= 0) return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  auto level = opt_level >= 3 ? llvm::OptimizationLevel::O3
               : opt_level == 2 ? llvm::OptimizationLevel::O2
                                : llvm::OptimizationLevel::O1;
  pb.buildPerModuleDefaultPipeline(level).run(m, mam);
}

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, const std::vector<tir::PrimFunc>& funcs,
                                           llvm::TargetMachine& tm, int opt_level) {
  auto m = std::make_unique<llvm::Module>("kiln", ctx);
  m->setTargetTriple(tm.getTargetTriple().str());
  m->setDataLayout(tm.createDataLayout());
  for (const tir::PrimFunc& f : funcs) {
    tir::verify_prim_func(*f);
    FunctionBuilder(*m, *f).build();
  }
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*m, &os))
    throw Error("internal error: codegen produced invalid LLVM IR: " + os.str());
  optimize(*m, tm, opt_level);
  return m;
}

std::string llvm_error(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

// Machine code for the host into `out` (assembly or object).
void emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, llvm::raw_pwrite_stream& out,
                       llvm::CodeGenFileType type) {
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out, nullptr, type))
    throw Error("LLVM cannot emit this file type for the host target");
  pm.run(m);
}

}  // namespace

std::string emit_text(const std::vector<tir::PrimFunc>& funcs, EmitKind kind, const CodegenOptions& options) {
  KILN_CHECK(kind == EmitKind::LLVMIR || kind == EmitKind::Assembly,
             "emit_text writes ll or asm; use emit_to_file for obj and so");
  if (options.check_imports) check_imports(collect_imports(funcs), options.link_libs);
  auto tm = host_target_machine(options.opt_level);
  llvm::LLVMContext ctx;
  auto m = build_module(ctx, funcs, *tm, options.opt_level);
  llvm::SmallString<4096> text;
  llvm::raw_svector_ostream os(text);
  if (kind == EmitKind::LLVMIR) {
    m->print(os, nullptr);
  } else {
    emit_machine_code(*m, *tm, os, llvm::CodeGenFileType::AssemblyFile);
  }
  return std::string(text.str());
}

void emit_to_file(const std::vector<tir::PrimFunc>& funcs, EmitKind kind, const std::string& path,
                  const CodegenOptions& options) {
  if (options.check_imports) check_imports(collect_imports(funcs), options.link_libs);
  if (kind == EmitKind::LLVMIR || kind == EmitKind::Assembly) {
    CodegenOptions o = options;
    o.check_imports = false;
    std::string text = emit_text(funcs, kind, o);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    KILN_CHECK(f != nullptr, "cannot write ", path);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return;
  }
  auto tm = host_target_machine(options.opt_level);
  llvm::LLVMContext ctx;
  auto m = build_module(ctx, funcs, *tm, options.opt_level);
  std::string obj_path = kind == EmitKind::Object ? path : path + ".o";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(obj_path, ec, llvm::sys::fs::OF_None);
    KILN_CHECK(!ec, "cannot write ", obj_path, ": ", ec.message());
    emit_machine_code(*m, *tm, out, llvm::CodeGenFileType::ObjectFile);
  }
  if (kind == EmitKind::Object) return;
  // A shared library: its undefined symbols stay imports, resolved when the
  // runtime (or the named libraries) load it.
  std::string cmd = "ld.lld-19 -shared -o '" + path + "' '" + obj_path + "' 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  KILN_CHECK(p != nullptr, "cannot run ld.lld-19 to link ", path);
  std::string log;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) log.append(buf, n);
  int rc = pclose(p);
  std::remove(obj_path.c_str());
  KILN_CHECK(rc == 0, "linking ", path, " with ld.lld-19 failed: ", log);
}

// ---------------------------------------------------------------- JIT

struct JitModule::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<Import> imports;
};

JitModule::JitModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitModule::~JitModule() = default;

std::unique_ptr<JitModule> JitModule::create(const std::vector<tir::PrimFunc>& funcs,
                                             const CodegenOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->imports = collect_imports(funcs);
  if (options.check_imports) check_imports(impl->imports, options.link_libs, "build");
  // Load time: every import must resolve before any code runs, whatever the
  // build did. Only resolved symbols are given to the JIT, so nothing can bind
  // to a same-named symbol of the host process by accident.
  std::vector<ResolvedImport> resolved = resolve_imports(impl->imports, options.link_libs);
  check_imports(impl->imports, options.link_libs, "load");

  auto tm = host_target_machine(options.opt_level);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = build_module(*ctx, funcs, *tm, options.opt_level);

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) throw Error("cannot set up the JIT: " + llvm_error(jtmb.takeError()));
  jtmb->setCPU(llvm::sys::getHostCPUName().str());
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) throw Error("cannot create the JIT: " + llvm_error(jit.takeError()));
  llvm::orc::SymbolMap symbols;
  for (const ResolvedImport& r : resolved)
    symbols[(*jit)->mangleAndIntern(r.import.symbol)] = {llvm::orc::ExecutorAddr::fromPtr(r.address),
                                                         llvm::JITSymbolFlags::Exported};
  if (auto err = (*jit)->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))))
    throw Error("cannot define runtime symbols in the JIT: " + llvm_error(std::move(err)));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw Error("cannot add the module to the JIT: " + llvm_error(std::move(err)));
  impl->jit = std::move(*jit);
  return std::unique_ptr<JitModule>(new JitModule(std::move(impl)));
}

int32_t JitModule::call(const std::string& name, const std::vector<void*>& args) {
  auto addr = impl_->jit->lookup(name + "__packed");
  if (!addr) {
    llvm::consumeError(addr.takeError());
    throw Error("the module has no prim function @" + name);
  }
  auto fn = addr->toPtr<int32_t (*)(void**)>();
  std::vector<void*> a = args;
  return fn(a.data());
}

void JitModule::run(const std::string& name, const std::vector<void*>& args) {
  KilnBackendSetLastError("");
  int32_t code = call(name, args);
  if (code != 0)
    throw Error("@" + name + " failed (code " + std::to_string(code) + "): " + KilnBackendGetLastError());
}

const std::vector<Import>& JitModule::imports() const { return impl_->imports; }

}  // namespace kiln::codegen
