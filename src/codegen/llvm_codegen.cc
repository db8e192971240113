// LLVM IR of lowered prim functions (FunctionBuilder) and build_module,
// which verifies and optimizes it. The target machine, the pass pipelines
// and machine code output are llvm_pipeline.cc.
#include <llvm/Analysis/AliasAnalysis.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <unordered_map>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "codegen/llvm_internal.h"
#include "kiln/runtime/backend_api.h"
#include "runtime/host_code.h"
#include "runtime/runtime_abi.h"
#include "tir/mutator.h"
#include "tir/parallel.h"
#include "tir/text.h"

namespace kiln::codegen {

using tir::DataType;

namespace {

// ---------------------------------------------------------------- IR building

class FunctionBuilder {
 public:
  // `isa`: the target's vector instructions. x86 without AVX-512 keeps a
  // vector's lane mask in vector registers, not mask registers, so combining
  // two masks of more lanes than a register holds is costly (stored_select).
  FunctionBuilder(llvm::Module& m, const tir::PrimFuncNode& f, const VectorIsa& isa)
      : ctx_(m.getContext()), mod_(m), b_(m.getContext()), f_(f), isa_(isa) {}

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
      case DataType::Code::UInt:
        return b_.getIntNTy(t.bits);
      case DataType::Code::Float:
        if (t.bits == 16) return b_.getHalfTy();
        if (t.bits == 32) return b_.getFloatTy();
        return b_.getDoubleTy();
      case DataType::Code::Bool:
        return b_.getInt1Ty();
      case DataType::Code::Handle:
        return b_.getPtrTy();
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
      case ExprKind::Binary:
        return binary(static_cast<const tir::BinaryNode&>(*e));
      case ExprKind::Not:
        return b_.CreateNot(expr(static_cast<const tir::NotNode&>(*e).a));
      case ExprKind::Cast:
        return cast(static_cast<const tir::CastNode&>(*e));
      case ExprKind::Select: {
        return select(static_cast<const tir::SelectNode&>(*e));
      }
      case ExprKind::BufferLoad: {
        auto& n = static_cast<const tir::BufferLoadNode&>(*e);
        return load(n);
      }
      case ExprKind::Call:
        return call(static_cast<const tir::CallNode&>(*e));
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
    if (n.op == BinaryOp::Or)
      if (llvm::Value* unordered = nan_or_compare(n)) return unordered;
    llvm::Value* a = expr(n.a);
    llvm::Value* c = expr(n.b);
    DataType t = n.a->dtype;
    bool f = t.is_float(), s = t.is_int();
    switch (n.op) {
      case BinaryOp::Add:
        return f ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
      case BinaryOp::Sub:
        return f ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
      case BinaryOp::Mul:
        return f ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
      case BinaryOp::Div:
        return f ? b_.CreateFDiv(a, c) : s ? b_.CreateSDiv(a, c) : b_.CreateUDiv(a, c);
      case BinaryOp::Mod:
        return f ? b_.CreateFRem(a, c) : s ? b_.CreateSRem(a, c) : b_.CreateURem(a, c);
      case BinaryOp::Min:
        return b_.CreateSelect(f   ? b_.CreateFCmpOLT(a, c)
                               : s ? b_.CreateICmpSLT(a, c)
                                   : b_.CreateICmpULT(a, c),
                               a, c);
      case BinaryOp::Max:
        return b_.CreateSelect(f   ? b_.CreateFCmpOGT(a, c)
                               : s ? b_.CreateICmpSGT(a, c)
                                   : b_.CreateICmpUGT(a, c),
                               a, c);
      case BinaryOp::EQ:
        return f ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
      case BinaryOp::NE:
        return f ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
      case BinaryOp::LT:
        return f ? b_.CreateFCmpOLT(a, c) : s ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c);
      case BinaryOp::LE:
        return f ? b_.CreateFCmpOLE(a, c) : s ? b_.CreateICmpSLE(a, c) : b_.CreateICmpULE(a, c);
      case BinaryOp::GT:
        return f ? b_.CreateFCmpOGT(a, c) : s ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c);
      case BinaryOp::GE:
        return f ? b_.CreateFCmpOGE(a, c) : s ? b_.CreateICmpSGE(a, c) : b_.CreateICmpUGE(a, c);
      case BinaryOp::And:
        return b_.CreateAnd(a, c);
      case BinaryOp::Or:
        return b_.CreateOr(a, c);
      case BinaryOp::Shl:
        return b_.CreateShl(a, c);
      case BinaryOp::Shr:
        return s ? b_.CreateAShr(a, c) : b_.CreateLShr(a, c);
    }
    return nullptr;
  }

  // or(ne(x, x), x < k) and the like, k a constant other than NaN: "x is
  // NaN or x compares so with k", the test of a NaN-keeping max or min
  // (relu, clip, hard_swish), is one unordered comparison, which LLVM
  // selects as one vmaxps or vminps (the or of two comparisons stays
  // four instructions). Null when `n` is not of that form.
  llvm::Value* nan_or_compare(const tir::BinaryNode& n) {
    using tir::BinaryOp;
    auto same = [](const tir::Expr& a, const tir::Expr& b) {
      if (a.get() == b.get()) return true;
      const auto* va = tir::as<tir::VarNode>(a);
      const auto* vb = tir::as<tir::VarNode>(b);
      return va && va == vb;
    };
    auto non_nan_constant = [](const tir::Expr& e) {
      const tir::Expr* v = &e;
      if (const auto* b = tir::as<tir::BroadcastNode>(e)) v = &b->value;
      const auto* f = tir::as<tir::FloatImmNode>(*v);
      return f && !std::isnan(f->value);
    };
    for (int side = 0; side < 2; ++side) {
      const auto* nan = tir::as<tir::BinaryNode>(side == 0 ? n.a : n.b);
      const auto* cmp = tir::as<tir::BinaryNode>(side == 0 ? n.b : n.a);
      if (!nan || !cmp || nan->op != BinaryOp::NE || !nan->a->dtype.is_float() || !same(nan->a, nan->b))
        continue;
      if (!same(cmp->a, nan->a) || !non_nan_constant(cmp->b)) continue;
      llvm::Value* x = expr(cmp->a);
      llvm::Value* k = expr(cmp->b);
      switch (cmp->op) {
        case BinaryOp::LT:
          return b_.CreateFCmpULT(x, k);
        case BinaryOp::LE:
          return b_.CreateFCmpULE(x, k);
        case BinaryOp::GT:
          return b_.CreateFCmpUGT(x, k);
        case BinaryOp::GE:
          return b_.CreateFCmpUGE(x, k);
        default:
          break;
      }
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
    if (from.is_float() && to.is_float()) {
      llvm::Value* r = b_.CreateFPCast(v, ty);
      // A float16 value widened is computed on as float32: the fence keeps
      // InstCombine from narrowing the float32 compares and selects on it
      // (relu, max) to float16 ones, which x86 without AVX-512 FP16 runs
      // element by element (ResNet-18's first conv in float16: 1.2 ms of
      // epilogue). It is no instruction.
      if (from.bits == 16 && to.bits > 16 && isa_.x86)
        r = b_.CreateIntrinsic(llvm::Intrinsic::arithmetic_fence, {ty}, {r});
      return r;
    }
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

  // The loop depth an expression varies at: that of the innermost loop whose
  // variable it reads (through let variables too); 0 for none.
  int depth_of(const tir::Expr& e) {
    struct Depth : tir::Visitor {
      const std::unordered_map<const tir::VarNode*, int>& of;
      int depth = 0;
      explicit Depth(const std::unordered_map<const tir::VarNode*, int>& o) : of(o) {}
      void visit_Var(const tir::VarNode& v) override {
        if (auto it = of.find(&v); it != of.end()) depth = std::max(depth, it->second);
      }
    } d(var_depth_);
    d.visit(e);
    return d.depth;
  }

  // The address of element `index` of `base`. An index that sums terms of
  // the innermost loop and terms of outer ones is two steps, the outer part
  // first, so that LLVM hoists it out of the loop and the loop's own part is
  // added to a pointer (a register tile's rows: one pointer per row, each
  // offset by the reduction's index) rather than to 32-bit integers that SLP
  // would pack into vectors and extract again.
  //
  // Constant terms (a tile row's offset: (row0 + 3) * stride) are a last
  // step of their own, a constant the address folds in, so that the rows
  // of a tile share one pointer instead of holding one register each (12
  // rows of a conv's weights spilled them with AVX2).
  llvm::Value* element_ptr(llvm::Type* elem, llvm::Value* base, const tir::Expr& index) {
    if (!index->dtype.is_vector()) {
      int64_t offset = 0;
      if (tir::Expr rest = without_constant(index, &offset); rest && offset != 0)
        return b_.CreateGEP(elem, split_element_ptr(elem, base, rest), b_.getInt64(offset));
    }
    return split_element_ptr(elem, base, index);
  }

  llvm::Value* split_element_ptr(llvm::Type* elem, llvm::Value* base, const tir::Expr& index) {
    const int inner = int(loop_depth_);
    if (inner > 0 && !index->dtype.is_vector() && index->kind == tir::ExprKind::Binary &&
        static_cast<const tir::BinaryNode&>(*index).op == tir::BinaryOp::Add) {
      std::vector<tir::Expr> terms, outer_terms, inner_terms;
      std::function<void(const tir::Expr&)> flatten = [&](const tir::Expr& e) {
        auto* b = e->kind == tir::ExprKind::Binary ? static_cast<const tir::BinaryNode*>(e.get()) : nullptr;
        if (b && b->op == tir::BinaryOp::Add) {
          flatten(b->a);
          flatten(b->b);
        } else {
          terms.push_back(e);
        }
      };
      flatten(index);
      for (const tir::Expr& t : terms) (depth_of(t) < inner ? outer_terms : inner_terms).push_back(t);
      if (!outer_terms.empty() && !inner_terms.empty()) {
        auto sum = [](const std::vector<tir::Expr>& v) {
          tir::Expr out = v[0];
          for (size_t i = 1; i < v.size(); ++i) out = tir::add(out, v[i]);
          return out;
        };
        // Plain GEPs: the outer part alone may point outside the buffer.
        llvm::Value* row = b_.CreateGEP(elem, base, expr(sum(outer_terms)));
        return b_.CreateGEP(elem, row, expr(sum(inner_terms)));
      }
    }
    return b_.CreateInBoundsGEP(elem, base, expr(index));
  }

  llvm::Value* load(const tir::BufferLoadNode& n) {
    const tir::Expr& index = flat_index(n.buffer, n.indices);
    llvm::Value* base = buffer_base(n.buffer);
    llvm::Type* elem = memory_type(n.buffer->dtype.element());
    if (n.dtype.lanes == 1) {
      llvm::Value* p = element_ptr(elem, base, index);
      return to_register(b_.CreateAlignedLoad(elem, p, elem_align(*n.buffer)), n.dtype);
    }
    if (auto* r = dense_ramp(index)) {
      llvm::Value* p = element_ptr(elem, base, r->base);
      return to_register(b_.CreateAlignedLoad(memory_type(n.dtype), p, elem_align(*n.buffer)), n.dtype);
    }
    // Lanes at constant offsets from one scalar index (a strided conv's
    // input, a transposed conv's repeated input and weights): one load of
    // the span from the lowest to the highest lane, then the lanes picked
    // from it. The span ends at a lane's element, so it reads nothing the
    // lanes would not pass over.
    if (auto pattern = lane_pattern(index)) {
      if (llvm::Value* t = transposed_load(n, *pattern, elem, base)) return to_register(t, n.dtype);
      auto [lo, hi] = std::minmax_element(pattern->offsets.begin(), pattern->offsets.end());
      const int64_t span = *hi - *lo + 1;
      if (span <= 4 * int64_t(pattern->offsets.size())) {
        // int16 pairs' rows (vpmaddwd's broadcasts) through element_ptr,
        // hoisted, not a 32-bit lea and movslq per row and step (ResNet-18
        // QDQ, AVX2 code: 26.5 -> 23.4 ms); not bytes (AVX-512 VNNI's BERT
        // products clustered such loads beyond 32 registers: 30% slower).
        const tir::Expr& i = pattern->scalar;
        llvm::Value* scalar = n.buffer->dtype.is_int() && n.buffer->dtype.bits == 16 ? nullptr : expr(i);
        auto load_at = [&](int64_t offset, int64_t elements) {
          llvm::Type* type = llvm::FixedVectorType::get(elem, unsigned(elements));
          if (!scalar)
            return b_.CreateAlignedLoad(
                type, element_ptr(elem, base, offset ? tir::add(i, tir::int_imm(offset, i->dtype)) : i),
                elem_align(*n.buffer));
          llvm::Value* at = b_.CreateAdd(scalar, llvm::ConstantInt::get(scalar->getType(), offset));
          return b_.CreateAlignedLoad(type, b_.CreateInBoundsGEP(elem, base, at), elem_align(*n.buffer));
        };
        const int64_t lanes = int64_t(pattern->offsets.size());
        const int64_t stride = pattern->uniform_stride();
        const bool strided = stride >= 2 && lanes % 2 == 0;
        llvm::SmallVector<int, 64> pick;
        if (strided) {
          // Every stride-th element: two loads of half of lanes * stride
          // elements, the first from the first lane's element, the second
          // up to the last lane's, each a whole number of registers (the
          // span itself, one element short of that, makes LLVM assemble the
          // last register element by element).
          const int64_t half = lanes * stride / 2, second = *hi - half + 1;
          for (int64_t l = 0; l < lanes; ++l) {
            const int64_t o = pattern->offsets[size_t(l)];
            pick.push_back(int(l < lanes / 2 ? o - *lo : half + o - second));
          }
          llvm::Value* low = load_at(*lo, half);
          llvm::Value* high = load_at(second, half);
          return to_register(b_.CreateShuffleVector(low, high, pick), n.dtype);
        }
        for (int64_t o : pattern->offsets) pick.push_back(int(o - *lo));
        return to_register(b_.CreateShuffleVector(load_at(*lo, span), pick), n.dtype);
      }
    }
    // Through let-bound ramps too (share-common-subexpressions binds a
    // window's column and channel lanes).
    if (auto pattern = lane_pattern(without_lets(index, let_values_)))
      if (pattern->interleaved_rows())
        return to_register(
            load_interleaved_rows(b_, elem, base, elem_align(*n.buffer), expr(pattern->scalar), *pattern),
            n.dtype);
    if (auto run = clamped_run(index, let_values_)) {
      llvm::Value* first = expr(run->base);
      llvm::Value* offset = run->offset ? expr(run->offset) : nullptr;
      return to_register(load_clamped_run(b_, elem, base, elem_align(*n.buffer), first, offset, *run,
                                          unsigned(n.dtype.lanes)),
                         n.dtype);
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

  // L lanes S elements apart (S a multiple of L; L = 4, 8 or 16) from an
  // index whose remainder by L is known (known_remainder): the lanes lie in L
  // aligned blocks of L elements, at the same column c of each. The blocks
  // are loaded as L rows and transposed in registers (transposed_columns);
  // the lanes are column c. The L statements of a block copy's unrolled
  // columns (nn.block_channels, nn.unblock_channels: TransposeTile) read the
  // same rows through indices of different forms ((x + 1) - 1 beside x, in
  // 32-bit arithmetic LLVM cannot reassociate), so the rows are found by
  // their origin's form with the lets substituted and the constant apart
  // (TransposedRows): one L x L transpose per block instead of L (8 x 8,
  // AVX-512, batch-8 64 channels at 56 x 56: 695 -> 515 us). Every block
  // holds an element the statement reads and the buffer is whole blocks
  // long, so no row reads outside it.
  llvm::Value* transposed_load(const tir::BufferLoadNode& n, const LanePattern& pattern, llvm::Type* elem,
                               llvm::Value* base) {
    const int64_t lanes = n.dtype.lanes;
    if (lanes != 4 && lanes != 8 && lanes != 16) return nullptr;
    auto numel = n.buffer->const_numel();
    if (!numel || *numel % lanes != 0) return nullptr;
    const int64_t stride = pattern.uniform_stride();
    if (stride <= 4 || stride % lanes != 0) return nullptr;
    const auto remainder = known_remainder(pattern.scalar, lanes, let_values_);
    if (!remainder) return nullptr;
    const int64_t c = (*remainder + pattern.offsets[0] % lanes + lanes) % lanes;
    int64_t offset = pattern.offsets[0] - c;
    const tir::Expr origin = without_constant(without_lets(pattern.scalar, let_values_), &offset);
    std::string key = TransposedRows::key(origin, offset, stride, lanes);
    if (const auto* columns = transposed_rows_.find(b_.GetInsertBlock(), base, key))
      return (*columns)[size_t(c)];
    llvm::Type* index_type = scalar_type(pattern.scalar->dtype);
    llvm::Value* at = llvm::ConstantInt::get(index_type, offset);
    if (origin) at = b_.CreateAdd(expr(origin), at);
    auto* row_type = llvm::FixedVectorType::get(elem, unsigned(lanes));
    std::vector<llvm::Value*> rows;
    for (int64_t k = 0; k < lanes; ++k) {
      llvm::Value* row = b_.CreateAdd(at, llvm::ConstantInt::get(index_type, k * stride));
      rows.push_back(
          b_.CreateAlignedLoad(row_type, b_.CreateInBoundsGEP(elem, base, row), elem_align(*n.buffer)));
    }
    return transposed_rows_.add(b_.GetInsertBlock(), base, std::move(key),
                                transposed_columns(b_, std::move(rows)))[size_t(c)];
  }

  // A stored vector select whose condition is `and` with a broadcast scalar
  // (a padded window's row test beside its column test) branches on the
  // scalar: a row outside takes the false value without loading, and the
  // vector condition stays one comparison. Combined as vectors of i1 (what
  // LLVM folds a select of a select back into), the two cost AVX2 a dozen
  // packs and shifts per 16 lanes (the mask spans two registers). Only a
  // select stored as it is (a window's chunk): inside arithmetic the branch
  // would split straight-line code such as a tile's body.
  llvm::Value* stored_select(const tir::SelectNode& n) {
    if (llvm::Value* m = nan_keeping_max(n)) return m;
    const auto* both = tir::as<tir::BinaryNode>(n.cond);
    if (isa_.x86 && !isa_.avx512 && n.cond->dtype.lanes > 1 && both && both->op == tir::BinaryOp::And) {
      const tir::Expr* scalar = nullptr;
      const tir::Expr* vector = nullptr;
      if (const auto* b = tir::as<tir::BroadcastNode>(both->a))
        scalar = &b->value, vector = &both->b;
      else if (const auto* b = tir::as<tir::BroadcastNode>(both->b))
        scalar = &b->value, vector = &both->a;
      // A lane test that folds to a constant (a window row that is one
      // chunk, its columns fixed) costs nothing to combine, and the branch
      // would only add mispredictions (5x5 depthwise at 20x20: 0.08 ->
      // 0.11 ms).
      llvm::Value* lanes = scalar ? expr(*vector) : nullptr;
      if (lanes && !llvm::isa<llvm::Constant>(lanes)) {
        llvm::Value* otherwise = expr(n.false_value);
        auto* test_bb = llvm::BasicBlock::Create(ctx_, "select_lanes", fn_);
        auto* done_bb = llvm::BasicBlock::Create(ctx_, "selected", fn_);
        llvm::BasicBlock* skip_bb = b_.GetInsertBlock();
        b_.CreateCondBr(expr(*scalar), test_bb, done_bb);
        b_.SetInsertPoint(test_bb);
        llvm::Value* inner = b_.CreateSelect(lanes, expr(n.true_value), otherwise);
        llvm::BasicBlock* inner_bb = b_.GetInsertBlock();
        b_.CreateBr(done_bb);
        b_.SetInsertPoint(done_bb);
        llvm::PHINode* phi = b_.CreatePHI(otherwise->getType(), 2);
        phi->addIncoming(otherwise, skip_bb);
        phi->addIncoming(inner, inner_bb);
        return phi;
      }
    }
    return b_.CreateSelect(expr(n.cond), expr(n.true_value), expr(n.false_value));
  }

  // select(ne(v, v), v, max(v, m)), te::nan_max's step (v if it is NaN,
  // else the larger, m if m is NaN), as x86 runs it: max(v, m) is one
  // vmaxps (m when either is NaN), then a NaN v is blended in. Emitted as
  // two plain selects, LLVM merges them into one select on
  // or(unordered(v), v > m): two compares into masks and their or per
  // vector, which made a max over 64 x 56 x 56 wait on the mask unit (AVX-512:
  // 2.5 cycles a vector). A freeze between them keeps them apart. Null when
  // `n` is not of that form.
  llvm::Value* nan_keeping_max(const tir::SelectNode& n) {
    const auto* nan = tir::as<tir::BinaryNode>(n.cond);
    const auto* larger = tir::as<tir::BinaryNode>(n.false_value);
    if (!isa_.x86 || !nan || nan->op != tir::BinaryOp::NE || !larger || larger->op != tir::BinaryOp::Max ||
        !n.true_value->dtype.is_float() || !tir::structural_equal(nan->a, n.true_value) ||
        !tir::structural_equal(nan->b, n.true_value) || !tir::structural_equal(larger->a, n.true_value))
      return nullptr;
    llvm::Value* v = expr(n.true_value);
    llvm::Value* m = b_.CreateFreeze(expr(n.false_value));
    return b_.CreateSelect(b_.CreateFCmpUNO(v, v), v, m);
  }

  // A vector select on one scalar test for all lanes, inside arithmetic
  // (a padded conv's weight zeroed where its tap reads the padding),
  // selects on the scalar with AVX2: LLVM then branches or blends, where a
  // splat of i1 lanes costs a broadcast, a widening and two shifts to make
  // the mask (5x5/2 depthwise read in place: 0.245 -> 0.197 ms). A stored
  // one (a padded window's row) keeps the splat, which LLVM folds into the
  // load (3x3 depthwise at 12x80: 0.058 -> 0.063-0.072 ms otherwise), and
  // so does AVX-512, whose splat is a mask register.
  llvm::Value* select(const tir::SelectNode& n) {
    if (llvm::Value* m = nan_keeping_max(n)) return m;
    const auto* splat = tir::as<tir::BroadcastNode>(n.cond);
    llvm::Value* cond = splat && isa_.x86 && !isa_.avx512 ? expr(splat->value) : expr(n.cond);
    return b_.CreateSelect(cond, expr(n.true_value), expr(n.false_value));
  }

  void store(const tir::BufferStoreNode& n) {
    const tir::Expr& index = flat_index(n.buffer, n.indices);
    llvm::Value* base = buffer_base(n.buffer);
    transposed_rows_.forget_written(base);
    llvm::Type* elem = memory_type(n.buffer->dtype.element());
    const auto* selected = tir::as<tir::SelectNode>(n.value);
    llvm::Value* v = to_memory(selected ? stored_select(*selected) : expr(n.value), n.value->dtype);
    if (n.value->dtype.lanes == 1) {
      b_.CreateAlignedStore(v, element_ptr(elem, base, index), elem_align(*n.buffer));
      return;
    }
    if (auto* r = dense_ramp(index)) {
      b_.CreateAlignedStore(v, element_ptr(elem, base, r->base), elem_align(*n.buffer));
      return;
    }
    // Consecutive lanes written as a quotient and remainder (a window's
    // columns and their four channels: l / 4 * 4 + l % 4).
    if (auto pattern = lane_pattern(without_lets(index, let_values_));
        pattern && pattern->uniform_stride() == 1) {
      llvm::Type* index_type = scalar_type(pattern->scalar->dtype);
      llvm::Value* at = b_.CreateAdd(expr(pattern->scalar),
                                     llvm::ConstantInt::get(index_type, uint64_t(pattern->offsets[0])));
      b_.CreateAlignedStore(v, b_.CreateInBoundsGEP(elem, base, at), elem_align(*n.buffer));
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
      transposed_rows_.clear();  // the callee may write any buffer
      std::vector<llvm::Type*> types;
      for (llvm::Value* a : args) types.push_back(a->getType());
      // bool results cross the C boundary as int8 (C's bool is a byte).
      llvm::Type* ret = n.dtype.is_bool() ? b_.getInt8Ty() : type(n.dtype);
      auto* fty = llvm::FunctionType::get(ret, types, false);
      llvm::Function* callee = mod_.getFunction(n.name);
      if (callee && callee->getFunctionType() != fty)
        throw Error("extern function '" + n.name + "' is called with two different signatures in @" +
                    f_.name);
      if (!callee) {
        callee = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, n.name, mod_);
        // The runtime's allocators return fresh memory, like malloc: without
        // noalias, LLVM guards loops that use such a buffer and a stack
        // buffer (a register tile) with overlap checks and keeps the tile
        // in memory.
        if (n.name == "HexagonBackendAllocateVTCM" || n.name == "KilnBackendAllocWorkspace")
          callee->addRetAttr(llvm::Attribute::NoAlias);
      }
      llvm::Value* r = b_.CreateCall(callee, args);
      return n.dtype.is_bool() ? to_register(r, n.dtype) : r;
    }
    auto intrinsic = tir::intrinsic_from_name(n.name);
    KILN_ASSERT(intrinsic.has_value(), "codegen: unknown intrinsic");
    DataType t = n.args.empty() ? n.dtype : n.args[0]->dtype;
    if (llvm::Value* math = math_intrinsic(mod_, b_, *intrinsic, t, args, isa_)) return math;
    switch (*intrinsic) {
      case tir::Intrinsic::IsNull:
        return b_.CreateIsNull(args[0]);
      case tir::Intrinsic::Likely:
        return b_.CreateIntrinsic(llvm::Intrinsic::expect, {args[0]->getType()}, {args[0], b_.getTrue()});
      case tir::Intrinsic::AddressOffset:
        return b_.CreateGEP(b_.getInt8Ty(), args[0], args[1]);
      case tir::Intrinsic::ParallelStatus:
        return b_.CreateLoad(b_.getInt32Ty(), parallel_status_slot());
      case tir::Intrinsic::DotI8x4:
        return dot_i8x4(b_, args[0], args[1], args[2], n.args[1]->dtype.is_uint(),
                        llvm::Triple(mod_.getTargetTriple()).getArch() == llvm::Triple::hexagon,
                        isa_.vnni_lanes);
      case tir::Intrinsic::DotI16x2:
        return dot_i16x2(b_, args[0], args[1], args[2], isa_.pmaddwd_lanes);
      default:
        break;
    }
    return nullptr;
  }

  // ------------------------------------------------------------ statements

  void stmt(const tir::Stmt& s) {
    using tir::StmtKind;
    switch (s->kind) {
      case StmtKind::For: {
        auto& n = static_cast<const tir::ForNode&>(*s);
        return n.for_kind == tir::ForKind::Parallel ? parallel_loop(n, false) : loop(n);
      }
      case StmtKind::Allocate: {
        auto& n = static_cast<const tir::AllocateNode&>(*s);
        if (tir::is_scratchpad(n.buffer->scope))
          throw Error("codegen: scratchpad buffer %" + n.buffer->name + " in @" + f_.name +
                      " is not lowered; run lower-scratchpad-alloc first");
        const tir::BufferNode& b = *n.buffer;
        llvm::Value* count = b_.getInt64(1);
        for (const tir::Expr& e : b.shape)
          count = b_.CreateMul(count, b_.CreateIntCast(expr(e), b_.getInt64Ty(), true));
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
      case StmtKind::DeclBuffer: {
        // The buffer's data is aligned as declared (the scratchpad allocator
        // and the static plan guarantee it): vector loads and stores on it
        // need no realignment (on Hexagon, no valign).
        auto& n = static_cast<const tir::DeclBufferNode&>(*s);
        auto it = vars_.find(n.buffer->data.get());
        if (it != vars_.end() && n.buffer->alignment > 1 && it->second->getType()->isPointerTy())
          b_.CreateAlignmentAssumption(mod_.getDataLayout(), it->second, uint64_t(n.buffer->alignment));
        return stmt(n.body);
      }
      case StmtKind::BufferStore:
        return store(static_cast<const tir::BufferStoreNode&>(*s));
      case StmtKind::LetStmt: {
        auto& n = static_cast<const tir::LetStmtNode&>(*s);
        llvm::Value* v = expr(n.value);
        v->setName(n.var->name);
        vars_[n.var.get()] = v;
        var_depth_[n.var.get()] = depth_of(n.value);
        let_values_[n.var.get()] = n.value;
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
      case StmtKind::Seq: {
        const std::vector<tir::Stmt>& stmts = static_cast<const tir::SeqNode&>(*s).stmts;
        for (size_t i = 0; i < stmts.size(); ++i) {
          if (tir::is_parallel_loop(stmts[i]) && i + 1 < stmts.size() &&
              tir::is_parallel_failure_check(stmts[i + 1])) {
            parallel_loop(static_cast<const tir::ForNode&>(*stmts[i]), true);
            continue;
          }
          stmt(stmts[i]);
        }
        return;
      }
      case StmtKind::Evaluate:
        expr(static_cast<const tir::EvaluateNode&>(*s).value);
        return;
      case StmtKind::Return: {
        b_.CreateRet(expr(static_cast<const tir::ReturnNode&>(*s).value));
        // Code after a return is unreachable; give it a block of its own.
        b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "after_return", fn_));
        return;
      }
    }
  }

  // Vectorized and unrolled loops carry LLVM loop hints.
  void loop(const tir::ForNode& n) {
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
    var_depth_[n.var.get()] = int(++loop_depth_);
    stmt(n.body);
    --loop_depth_;
    if (!b_.GetInsertBlock()->getTerminator()) {
      // i < end, so i + 1 does not wrap.
      llvm::Value* one = llvm::ConstantInt::get(min->getType(), 1);
      llvm::Value* next = n.var->dtype.is_int() ? b_.CreateNSWAdd(i, one) : b_.CreateNUWAdd(i, one);
      i->addIncoming(next, b_.GetInsertBlock());
      llvm::BranchInst* br = b_.CreateBr(head);
      if (n.for_kind == tir::ForKind::Vectorized || n.for_kind == tir::ForKind::Unrolled) {
        const char* hint =
            n.for_kind == tir::ForKind::Vectorized ? "llvm.loop.vectorize.enable" : "llvm.loop.unroll.full";
        llvm::SmallVector<llvm::Metadata*, 2> ops = {nullptr};
        if (n.for_kind == tir::ForKind::Vectorized)
          ops.push_back(llvm::MDNode::get(
              ctx_, {llvm::MDString::get(ctx_, hint), llvm::ConstantAsMetadata::get(b_.getTrue())}));
        else
          ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, hint)}));
        llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
        md->replaceOperandWith(0, md);
        br->setMetadata(llvm::LLVMContext::MD_loop, md);
      }
    }
    b_.SetInsertPoint(done);
  }

  // A parallel loop: its body becomes a task function
  //   i32 @f__parallel_N(i64 begin, i64 end, ptr env)
  // that runs iterations [begin, end), and the loop becomes a call of the
  // runtime's KilnBackendParallelFor(extent, task, env). env is a struct on
  // the caller's stack holding the loop's min and every value the body reads
  // from outside (enclosing loop variables, lets, buffer data pointers,
  // scalar parameters); the caller waits for the tasks, so it outlives them.
  // The task unpacks env and calls @f__parallel_N_body(begin, end, min,
  // values...), where the loop runs with the body's own allocations (per
  // task): as arguments, buffers keep what LLVM knows in the kernel, that
  // they do not overlap (noalias, which becomes scoped alias metadata once
  // LLVM inlines the body into the task), so loops in the body are
  // vectorized as in the kernel. A return inside the body returns from the
  // task. After the call, a failure is either kept
  // for the failure check that follows the loop (`checked`, tir/parallel.h)
  // or returned from the function here.
  void parallel_loop(const tir::ForNode& n, bool checked) {
    llvm::Value* min = expr(n.min);
    llvm::Value* count = b_.CreateIntCast(expr(n.extent), b_.getInt64Ty(), n.var->dtype.is_int());
    std::vector<const tir::VarNode*> captures = tir::loop_body_inputs(n);
    std::vector<llvm::Value*> values = {min};
    for (const tir::VarNode* v : captures) {
      auto it = vars_.find(v);
      KILN_ASSERT(it != vars_.end(), "codegen: a parallel loop reads a variable without a value");
      values.push_back(it->second);
    }
    std::vector<llvm::Type*> fields;
    for (llvm::Value* v : values) fields.push_back(v->getType());
    auto* env_ty = llvm::StructType::get(ctx_, fields);
    llvm::AllocaInst* env =
        llvm::IRBuilder<>(entry_, entry_->begin()).CreateAlloca(env_ty, nullptr, "parallel_env");
    for (size_t i = 0; i < values.size(); ++i)
      b_.CreateStore(values[i], b_.CreateStructGEP(env_ty, env, unsigned(i)));

    std::string name = f_.name + "__parallel_" + std::to_string(parallel_tasks_++);
    std::vector<llvm::Type*> body_params = {b_.getInt64Ty(), b_.getInt64Ty()};
    body_params.insert(body_params.end(), fields.begin(), fields.end());
    auto* body_fn = llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), body_params, false),
                                           llvm::Function::InternalLinkage, name + "_body", mod_);
    // A pointer that is the only capture into its allocation (a kernel
    // buffer parameter, a runtime allocation, a stack buffer) is noalias in
    // the body too: nothing else the body reaches points into that memory.
    // Without it LLVM guards loops over such a buffer and a register tile
    // with overlap checks and keeps the tile in memory. Two captures into
    // one allocation (the static scratchpad plan) stay without.
    std::unordered_map<const llvm::Value*, int> captures_of;
    for (llvm::Value* v : values)
      if (v->getType()->isPointerTy()) ++captures_of[llvm::getUnderlyingObject(v)];
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i]->getType()->isPointerTy()) continue;
      const llvm::Value* object = llvm::getUnderlyingObject(values[i]);
      if (llvm::isIdentifiedObject(object) && captures_of[object] == 1)
        body_fn->getArg(unsigned(i + 2))->addAttr(llvm::Attribute::NoAlias);
    }
    build_parallel_body(n, body_fn, captures);

    auto* task_ty =
        llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt64Ty(), b_.getInt64Ty(), b_.getPtrTy()}, false);
    auto* task = llvm::Function::Create(task_ty, llvm::Function::InternalLinkage, name, mod_);
    glue(task);
    {
      llvm::IRBuilder<> tb(llvm::BasicBlock::Create(ctx_, "entry", task));
      std::vector<llvm::Value*> args = {task->getArg(0), task->getArg(1)};
      for (size_t i = 0; i < fields.size(); ++i)
        args.push_back(tb.CreateLoad(fields[i], tb.CreateStructGEP(env_ty, task->getArg(2), unsigned(i))));
      tb.CreateRet(tb.CreateCall(body_fn, args));
    }

    auto* launch_ty =
        llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt64Ty(), b_.getPtrTy(), b_.getPtrTy()}, false);
    llvm::FunctionCallee launch = mod_.getOrInsertFunction("KilnBackendParallelFor", launch_ty);
    llvm::Value* code = b_.CreateCall(launch, {count, task, env}, "parallel_code");
    if (checked) {
      b_.CreateStore(code, parallel_status_slot());
      return;
    }
    auto* failed = llvm::BasicBlock::Create(ctx_, "parallel_failed", fn_);
    auto* next = llvm::BasicBlock::Create(ctx_, "parallel_done", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(code, b_.getInt32(0)), failed, next);
    b_.SetInsertPoint(failed);
    b_.CreateRet(code);
    b_.SetInsertPoint(next);
  }

  // The loop of a parallel loop's body function (begin, end, min, captures...):
  // a function of its own, built with fresh state before returning to the
  // call site.
  void build_parallel_body(const tir::ForNode& n, llvm::Function* body_fn,
                           const std::vector<const tir::VarNode*>& captures) {
    llvm::Function* outer_fn = fn_;
    llvm::BasicBlock* outer_entry = entry_;
    llvm::AllocaInst* outer_status = status_;
    auto outer_vars = std::move(vars_);
    llvm::IRBuilderBase::InsertPoint call_site = b_.saveIP();
    fn_ = body_fn;
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", body_fn);
    status_ = nullptr;
    vars_.clear();
    b_.SetInsertPoint(entry_);
    llvm::Value* min = body_fn->getArg(2);
    for (size_t i = 0; i < captures.size(); ++i) {
      llvm::Argument* a = body_fn->getArg(unsigned(i + 3));
      a->setName(captures[i]->name);
      vars_[captures[i]] = a;
    }
    auto* head = llvm::BasicBlock::Create(ctx_, "for_" + n.var->name, fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "body_" + n.var->name, fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "end_" + n.var->name, fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* j = b_.CreatePHI(b_.getInt64Ty(), 2, "iteration");
    j->addIncoming(body_fn->getArg(0), entry_);
    b_.CreateCondBr(b_.CreateICmpSLT(j, body_fn->getArg(1)), body, done);
    b_.SetInsertPoint(body);
    vars_[n.var.get()] = b_.CreateAdd(min, b_.CreateIntCast(j, min->getType(), true), n.var->name);
    stmt(n.body);
    if (!b_.GetInsertBlock()->getTerminator()) {
      j->addIncoming(b_.CreateAdd(j, b_.getInt64(1)), b_.GetInsertBlock());
      b_.CreateBr(head);
    }
    b_.SetInsertPoint(done);
    b_.CreateRet(b_.getInt32(0));
    fn_ = outer_fn;
    entry_ = outer_entry;
    status_ = outer_status;
    vars_ = std::move(outer_vars);
    b_.restoreIP(call_site);
  }

  // A function that only moves arguments and calls (a parallel loop's task,
  // f__packed), run once per task or call: compiled without optimisation
  // (optnone), which takes LLVM a fraction of the time per function; a model
  // has one or two per kernel (det: 190 of its 258 functions).
  static void glue(llvm::Function* f) {
    f->addFnAttr(llvm::Attribute::OptimizeNone);
    f->addFnAttr(llvm::Attribute::NoInline);
  }

  // The current function's parallel_status(): 0 until a checked parallel loop fails.
  llvm::AllocaInst* parallel_status_slot() {
    if (status_) return status_;
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    status_ = eb.CreateAlloca(b_.getInt32Ty(), nullptr, "parallel_status");
    eb.CreateStore(eb.getInt32(0), status_);
    return status_;
  }

  // f__packed(void** args): unpacks and calls f.
  void build_packed(llvm::FunctionType* fty) {
    auto* pty = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy()}, false);
    auto* packed = llvm::Function::Create(pty, llvm::Function::ExternalLinkage, f_.name + "__packed", mod_);
    glue(packed);
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
  const VectorIsa isa_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::unordered_map<const tir::VarNode*, llvm::Value*> vars_;
  // The serial loops around the statement being built, and the depth each
  // loop and let variable varies at (depth_of).
  size_t loop_depth_ = 0;
  std::unordered_map<const tir::VarNode*, int> var_depth_;
  // Let-bound variables' values, for known_remainder.
  std::unordered_map<const tir::VarNode*, tir::Expr> let_values_;
  TransposedRows transposed_rows_;
  llvm::AllocaInst* status_ = nullptr;  // parallel_status() of fn_, made at first use
  int parallel_tasks_ = 0;
};

}  // namespace

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, const std::vector<tir::PrimFunc>& funcs,
                                           llvm::TargetMachine& tm, const CodegenOptions& options,
                                           bool with_harness, std::vector<std::string>* import_slots) {
  const int opt_level = options.opt_level;
  quiet_optimization_failures(ctx);
  auto m = std::make_unique<llvm::Module>("kiln", ctx);
  m->setTargetTriple(tm.getTargetTriple().str());
  m->setDataLayout(tm.createDataLayout());
  const VectorIsa isa = VectorIsa::of(tm);
  for (const tir::PrimFunc& f : funcs) {
    tir::verify_prim_func(*f);
    FunctionBuilder(*m, *f, isa).build();
  }
  if (with_harness) add_hexagon_harness(*m, funcs, options.target.vtcm_capacity);
  if (import_slots) *import_slots = use_import_slots(*m);
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*m, &os))
    throw Error("internal error: codegen produced invalid LLVM IR: " + os.str());
  optimize(*m, tm, opt_level, options.loop_vectorize, options.llvm_pass_times);
  return m;
}

}  // namespace kiln::codegen
