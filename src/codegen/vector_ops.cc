// Vector idioms the LLVM codegen emits (declared in codegen/llvm_internal.h):
// lanes at constant offsets from one index, read as one span; the forms of
// an index (its constant part, its remainder); the column of a transposed
// block of rows; tensor IR's math intrinsics, exp, sigmoid, tanh and erf
// of float32 vectors computed inline; int8 dot products by fours (HVX
// vrmpy).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsHexagon.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/TargetParser/Triple.h>

#include <functional>
#include <limits>
#include <string>

#include <vector>

#include "codegen/llvm_internal.h"
#include "tir/mutator.h"
#include "tir/text.h"

namespace kiln::codegen {

std::optional<LanePattern> lane_pattern(const tir::Expr& e) {
  const int lanes = e->dtype.lanes;
  if (auto* b = tir::as<tir::BroadcastNode>(e))
    return LanePattern{b->value, std::vector<int64_t>(size_t(lanes), 0)};
  if (auto* r = tir::as<tir::RampNode>(e)) {
    auto stride = tir::as_const_int(r->stride);
    if (!stride) return std::nullopt;
    LanePattern p{r->base, {}};
    for (int l = 0; l < lanes; ++l) p.offsets.push_back(l * *stride);
    return p;
  }
  auto* bin = tir::as<tir::BinaryNode>(e);
  if (!bin || !e->dtype.is_integer()) return std::nullopt;
  auto constant = [](const tir::Expr& x) -> std::optional<int64_t> {
    auto* b = tir::as<tir::BroadcastNode>(x);
    return b ? tir::as_const_int(b->value) : std::nullopt;
  };
  using tir::BinaryOp;
  if (bin->op == BinaryOp::Add || bin->op == BinaryOp::Sub) {
    auto a = lane_pattern(bin->a), b = a ? lane_pattern(bin->b) : std::nullopt;
    if (!b) return std::nullopt;
    LanePattern p{tir::binary(bin->op, a->scalar, b->scalar), a->offsets};
    for (size_t l = 0; l < p.offsets.size(); ++l)
      p.offsets[l] += bin->op == BinaryOp::Add ? b->offsets[l] : -b->offsets[l];
    return p;
  }
  auto c = constant(bin->b);
  if (!c) return std::nullopt;
  auto a = lane_pattern(bin->a);
  if (!a) return std::nullopt;
  if (bin->op == BinaryOp::Mul) {
    LanePattern p{tir::mul(a->scalar, tir::int_imm(*c, a->scalar->dtype)), a->offsets};
    for (int64_t& o : p.offsets) o *= *c;
    return p;
  }
  // A clamp of constant lanes (a padded input's first columns).
  if ((bin->op == BinaryOp::Min || bin->op == BinaryOp::Max) && tir::as_const_int(a->scalar)) {
    const int64_t s = *tir::as_const_int(a->scalar);
    LanePattern p = *a;
    for (int64_t& o : p.offsets)
      o = (bin->op == BinaryOp::Min ? std::min(s + o, *c) : std::max(s + o, *c)) - s;
    return p;
  }
  if ((bin->op == BinaryOp::Div || bin->op == BinaryOp::Mod) && *c > 0 && tir::is_const_int(a->scalar, 0)) {
    LanePattern p = *a;
    for (int64_t& o : p.offsets) {
      if (o < 0) return std::nullopt;
      o = bin->op == BinaryOp::Div ? o / *c : o % *c;
    }
    return p;
  }
  return std::nullopt;
}

int64_t LanePattern::uniform_stride() const {
  if (offsets.size() < 2) return 0;
  const int64_t stride = offsets[1] - offsets[0];
  for (size_t l = 0; l < offsets.size(); ++l)
    if (offsets[l] != offsets[0] + int64_t(l) * stride) return 0;
  return stride;
}

int64_t LanePattern::interleaved_rows() const {
  const int64_t lanes = int64_t(offsets.size());
  for (const int64_t g : {4, 2}) {
    const int64_t per = lanes / g;
    if (lanes % g || per < 2) continue;
    const int64_t first = offsets[0], stride = offsets[1] - first;
    bool interleaved = stride >= per;
    for (int64_t l = 0; l < lanes && interleaved; ++l)
      interleaved = offsets[size_t(l)] == first + (l % g) * stride + l / g;
    if (interleaved) return g;
  }
  return 0;
}

llvm::Value* load_interleaved_rows(llvm::IRBuilder<>& b, llvm::Type* elem, llvm::Value* base,
                                   llvm::Align align, llvm::Value* scalar, const LanePattern& p) {
  const int64_t lanes = int64_t(p.offsets.size()), g = p.interleaved_rows(), per = lanes / g;
  const int64_t first = p.offsets[0], stride = p.offsets[1] - first;
  auto* row_type = llvm::FixedVectorType::get(elem, unsigned(per));
  std::vector<llvm::Value*> rows;
  for (int64_t k = 0; k < g; ++k) {
    llvm::Value* at =
        b.CreateAdd(scalar, llvm::ConstantInt::get(scalar->getType(), uint64_t(first + k * stride)));
    rows.push_back(b.CreateAlignedLoad(row_type, b.CreateInBoundsGEP(elem, base, at), align));
  }
  // The rows side by side, then lane l from row l % g, column l / g.
  while (rows.size() > 1) {
    std::vector<llvm::Value*> joined;
    const unsigned width = llvm::cast<llvm::FixedVectorType>(rows[0]->getType())->getNumElements();
    llvm::SmallVector<int, 128> both;
    for (unsigned i = 0; i < 2 * width; ++i) both.push_back(int(i));
    for (size_t r = 0; r < rows.size(); r += 2)
      joined.push_back(b.CreateShuffleVector(rows[r], rows[r + 1], both));
    rows = std::move(joined);
  }
  llvm::SmallVector<int, 128> pick;
  for (int64_t l = 0; l < lanes; ++l) pick.push_back(int((l % g) * per + l / g));
  return b.CreateShuffleVector(rows[0], pick);
}

tir::Expr without_constant(const tir::Expr& index, int64_t* offset) {
  auto int_value = [](const tir::Expr& e, int64_t* v) {
    if (e->kind != tir::ExprKind::IntImm) return false;
    *v = static_cast<const tir::IntImmNode&>(*e).value;
    return true;
  };
  int64_t c = 0;
  if (int_value(index, &c)) {
    *offset += c;
    return nullptr;
  }
  if (index->kind != tir::ExprKind::Binary) return index;
  const auto& b = static_cast<const tir::BinaryNode&>(*index);
  if (b.op == tir::BinaryOp::Add) {
    tir::Expr x = without_constant(b.a, offset), y = without_constant(b.b, offset);
    return !x ? y : !y ? x : (x == b.a && y == b.b ? index : tir::add(x, y));
  }
  if (b.op == tir::BinaryOp::Mul && int_value(b.b, &c) && b.a->kind == tir::ExprKind::Binary) {
    int64_t inner = 0;
    tir::Expr x = without_constant(b.a, &inner);
    if (inner == 0) return index;
    *offset += inner * c;
    return x ? tir::mul(x, b.b) : nullptr;
  }
  return index;
}

std::optional<int64_t> known_remainder(const tir::Expr& e, int64_t m,
                                       const std::unordered_map<const tir::VarNode*, tir::Expr>& lets) {
  if (auto c = tir::as_const_int(e)) return (*c % m + m) % m;
  if (e->kind == tir::ExprKind::Var) {
    auto it = lets.find(static_cast<const tir::VarNode*>(e.get()));
    return it == lets.end() ? std::nullopt : known_remainder(it->second, m, lets);
  }
  auto* b = tir::as<tir::BinaryNode>(e);
  if (!b) return std::nullopt;
  const auto x = known_remainder(b->a, m, lets), y = known_remainder(b->b, m, lets);
  if (b->op == tir::BinaryOp::Mul && ((x && *x == 0) || (y && *y == 0))) return 0;
  if (!x || !y) return std::nullopt;
  if (b->op == tir::BinaryOp::Add) return (*x + *y) % m;
  if (b->op == tir::BinaryOp::Sub) return (*x - *y + m) % m;
  if (b->op == tir::BinaryOp::Mul) return (*x * *y) % m;
  return std::nullopt;
}

std::vector<llvm::Value*> transposed_columns(llvm::IRBuilderBase& b, std::vector<llvm::Value*> rows) {
  const int64_t lanes = int64_t(rows.size());
  for (int64_t h = lanes / 2; h >= 1; h /= 2) {
    llvm::SmallVector<int, 16> first, second;
    for (int64_t i = 0; i < lanes; ++i) {
      first.push_back(int(i & h ? lanes + i - h : i));
      second.push_back(int(i & h ? lanes + i : i + h));
    }
    for (int64_t p = 0; p < lanes; ++p) {
      if (p & h) continue;
      llvm::Value *x = rows[size_t(p)], *y = rows[size_t(p + h)];
      rows[size_t(p)] = b.CreateShuffleVector(x, y, first);
      rows[size_t(p + h)] = b.CreateShuffleVector(x, y, second);
    }
  }
  return rows;
}

std::optional<ClampedRun> clamped_run(const tir::Expr& bound_e,
                                      const std::unordered_map<const tir::VarNode*, tir::Expr>& lets) {
  // A vector bound by a let (share-common-subexpressions names a clamped
  // run that several loads read): its value.
  auto resolved = [&](const tir::Expr& x) {
    tir::Expr v = x;
    while (v->kind == tir::ExprKind::Var) {
      auto it = lets.find(static_cast<const tir::VarNode*>(v.get()));
      if (it == lets.end()) break;
      v = it->second;
    }
    return v;
  };
  const tir::Expr e = resolved(bound_e);
  // A ramp's stride when it is a constant from 1 to 4, else 0.
  auto stride_of = [](const tir::RampNode& r) -> int64_t {
    auto s = tir::as_const_int(r.stride);
    return s && *s >= 1 && *s <= 4 ? *s : 0;
  };
  auto constant = [](const tir::Expr& x) -> std::optional<int64_t> {
    auto* b = tir::as<tir::BroadcastNode>(x);
    return b ? tir::as_const_int(b->value) : std::nullopt;
  };
  // min(max(r, lo), hi) or max(min(r, hi), lo), r a ramp of stride 1; or
  // a clamp on one side only, min(r, hi) or max(r, lo) (the simplifier
  // drops the max of an index it knows is non-negative: a padded column).
  auto clamp = [&](const tir::Expr& x) -> std::optional<ClampedRun> {
    auto* outer = tir::as<tir::BinaryNode>(x);
    if (!outer || (outer->op != tir::BinaryOp::Min && outer->op != tir::BinaryOp::Max)) return std::nullopt;
    if (auto* r = tir::as<tir::RampNode>(outer->a)) {
      auto bound = constant(outer->b);
      if (stride_of(*r) != 1 || !bound || !x->dtype.is_int() || x->dtype.bits > 64) return std::nullopt;
      const int64_t widest =
          x->dtype.bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (x->dtype.bits - 1)) - 1;
      if (outer->op == tir::BinaryOp::Min) return ClampedRun{tir::Expr(), r->base, -widest - 1, *bound};
      return ClampedRun{tir::Expr(), r->base, *bound, widest};
    }
    auto* inner = tir::as<tir::BinaryNode>(outer->a);
    const tir::BinaryOp other = outer->op == tir::BinaryOp::Min ? tir::BinaryOp::Max : tir::BinaryOp::Min;
    if (!inner || inner->op != other) return std::nullopt;
    auto* r = tir::as<tir::RampNode>(inner->a);
    auto c_outer = constant(outer->b), c_inner = constant(inner->b);
    if (!r || !stride_of(*r) || !c_outer || !c_inner) return std::nullopt;
    const int64_t lo = outer->op == tir::BinaryOp::Min ? *c_inner : *c_outer;
    const int64_t hi = outer->op == tir::BinaryOp::Min ? *c_outer : *c_inner;
    if (lo > hi) return std::nullopt;
    return ClampedRun{tir::Expr(), r->base, lo, hi, stride_of(*r)};
  };
  if (auto run = clamp(e)) return run;
  auto* add = tir::as<tir::BinaryNode>(e);
  if (!add || add->op != tir::BinaryOp::Add) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto* invariant = tir::as<tir::BroadcastNode>(resolved(side ? add->a : add->b));
    auto run = clamp(resolved(side ? add->b : add->a));
    if (invariant && run) {
      run->offset = invariant->value;
      return run;
    }
  }
  return std::nullopt;
}

namespace {

// e^c = e^r 2^k for c in a clamped range: k = round(c / ln 2) (integral
// float lanes, in *k) and e^r (see vector_exp_f32).
llvm::Value* exp_reduced(llvm::IRBuilder<>& b, llvm::Value* c, llvm::Value** k) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(c->getType());
  auto f = [&](double v) { return llvm::ConstantFP::get(vt, v); };
  *k = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(c, f(1.44269504088896341)));
  auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* add) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {a, m, add});
  };
  llvm::Value* r = fma(*k, f(-0.693359375), c);
  r = fma(*k, f(2.12194440e-4), r);
  llvm::Value* p = f(1.9875691500e-4);
  for (double coef : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
    p = fma(p, r, f(coef));
  return fma(p, b.CreateFMul(r, r), b.CreateFAdd(r, f(1.0)));
}

// 2^k as a float32, for integer lanes k in [-126, 127].
llvm::Value* pow2_f32(llvm::IRBuilder<>& b, llvm::Value* k, llvm::Type* vt) {
  auto* it = k->getType();
  llvm::Value* bits =
      b.CreateShl(b.CreateAdd(k, llvm::ConstantInt::get(it, 127)), llvm::ConstantInt::get(it, 23));
  return b.CreateBitCast(bits, vt);
}

// f applied lane for lane to the `width`-lane parts of the vectors xs (their
// lanes a power-of-two multiple of width), its results joined back: an x86
// instruction of one register's width on vectors of several registers.
llvm::Value* in_parts(llvm::IRBuilder<>& b, unsigned width, const std::vector<llvm::Value*>& xs,
                      const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& f) {
  const unsigned lanes = llvm::cast<llvm::FixedVectorType>(xs[0]->getType())->getNumElements();
  std::vector<llvm::Value*> parts;
  for (unsigned at = 0; at < lanes; at += width) {
    std::vector<int> pick;
    for (unsigned l = 0; l < width; ++l) pick.push_back(int(at + l));
    std::vector<llvm::Value*> args;
    for (llvm::Value* x : xs) args.push_back(lanes == width ? x : b.CreateShuffleVector(x, pick));
    parts.push_back(f(args));
  }
  while (parts.size() > 1) {
    std::vector<llvm::Value*> joined;
    for (size_t k = 0; k < parts.size(); k += 2) {
      const unsigned n = llvm::cast<llvm::FixedVectorType>(parts[k]->getType())->getNumElements();
      std::vector<int> all;
      for (unsigned l = 0; l < 2 * n; ++l) all.push_back(int(l));
      joined.push_back(b.CreateShuffleVector(parts[k], parts[k + 1], all));
    }
    parts = std::move(joined);
  }
  return parts[0];
}

// Whether a vector of `lanes` splits into a power of two of `width`-lane parts.
bool splits_into(unsigned lanes, unsigned width) {
  return lanes % width == 0 && ((lanes / width) & (lanes / width - 1)) == 0;
}

// p * 2^k for integral float lanes k, by AVX-512's vscalefps: one
// instruction, for any k (a result past the float range is infinite or
// rounds to a denormal or zero, once), NaN in either giving NaN.
llvm::Value* scale_by_pow2(llvm::IRBuilder<>& b, llvm::Value* p, llvm::Value* k) {
  return in_parts(b, 16, {p, k}, [&](const std::vector<llvm::Value*>& a) {
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                             {a[0], a[1], a[0], b.getInt16(uint16_t(0xffff)), b.getInt32(4)});
  });
}

// Whether scale_by_pow2 serves vectors of type vt on this target.
bool has_scalef(const VectorIsa& isa, llvm::Type* vt) {
  return isa.avx512 && splits_into(llvm::cast<llvm::FixedVectorType>(vt)->getNumElements(), 16);
}

// x clamped to [lo, hi], NaN staying NaN (one vmaxps and one vminps on x86,
// their operands in the order that passes a NaN through).
llvm::Value* clamp_keeping_nan(llvm::IRBuilder<>& b, llvm::Value* x, double lo, double hi) {
  auto* vt = x->getType();
  llvm::Value* l = llvm::ConstantFP::get(vt, lo);
  llvm::Value* h = llvm::ConstantFP::get(vt, hi);
  x = b.CreateSelect(b.CreateFCmpOLT(x, l), l, x);
  return b.CreateSelect(b.CreateFCmpOGT(x, h), h, x);
}

}  // namespace

llvm::Value* vector_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(x->getType());
  auto f = [&](double v) { return llvm::ConstantFP::get(vt, v); };
  llvm::Value* k = nullptr;
  if (has_scalef(isa, vt)) {
    // NaN passes the clamp, the polynomial and the scale.
    llvm::Value* p = exp_reduced(b, clamp_keeping_nan(b, x, -104.0, 89.0), &k);
    return scale_by_pow2(b, p, k);
  }
  llvm::Value* c = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, f(-104.0));
  c = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, c, f(89.0));
  llvm::Value* p = exp_reduced(b, c, &k);
  auto* it = llvm::FixedVectorType::get(b.getInt32Ty(), vt->getNumElements());
  llvm::Value* ki = b.CreateFPToSI(k, it);
  llvm::Value* half = b.CreateAShr(ki, llvm::ConstantInt::get(ki->getType(), 1));
  llvm::Value* y =
      b.CreateFMul(b.CreateFMul(p, pow2_f32(b, half, vt)), pow2_f32(b, b.CreateSub(ki, half), vt));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

std::string TransposedRows::key(const tir::Expr& origin, int64_t offset, int64_t stride, int64_t lanes) {
  return (origin ? tir::print_expr(origin) : std::string()) + " + " + std::to_string(offset) + " by " +
         std::to_string(stride) + " x " + std::to_string(lanes);
}

const std::vector<llvm::Value*>* TransposedRows::find(llvm::BasicBlock* block, llvm::Value* base,
                                                      const std::string& key) const {
  for (const Block& b : blocks_)
    if (b.block == block && b.base == base && b.key == key) return &b.columns;
  return nullptr;
}

const std::vector<llvm::Value*>& TransposedRows::add(llvm::BasicBlock* block, llvm::Value* base,
                                                     std::string key, std::vector<llvm::Value*> columns) {
  blocks_.push_back({block, base, std::move(key), std::move(columns)});
  return blocks_.back().columns;
}

void TransposedRows::forget_written(llvm::Value* base) {
  auto distinct = [](llvm::Value* v) {
    if (llvm::isa<llvm::AllocaInst>(v)) return true;
    auto* a = llvm::dyn_cast<llvm::Argument>(v);
    return a && a->hasNoAliasAttr();
  };
  std::erase_if(blocks_,
                [&](const Block& b) { return b.base == base || !distinct(b.base) || !distinct(base); });
}

tir::Expr without_lets(tir::Expr e, const std::unordered_map<const tir::VarNode*, tir::Expr>& lets) {
  for (;;) {
    tir::Expr next = tir::substitute(e, lets);
    if (next.get() == e.get()) return e;
    e = std::move(next);
  }
}

llvm::Value* libm_call(llvm::Module& m, llvm::IRBuilderBase& b, llvm::Type* elem, const std::string& symbol,
                       llvm::Value* v) {
  llvm::FunctionCallee fn = m.getOrInsertFunction(symbol, llvm::FunctionType::get(elem, {elem}, false));
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  if (!vt) return b.CreateCall(fn, {v});
  llvm::Value* out = llvm::PoisonValue::get(vt);
  for (unsigned i = 0; i < vt->getNumElements(); ++i)
    out = b.CreateInsertElement(out, b.CreateCall(fn, {b.CreateExtractElement(v, uint64_t(i))}), uint64_t(i));
  return out;
}

namespace {

// An odd function from its Taylor coefficients c0, c1, ... (of x, x^3, ...)
// where |x| < `small`, else from `large`(|x|) with x's sign.
llvm::Value* odd_function_f32(llvm::IRBuilder<>& b, llvm::Value* x, const std::vector<double>& taylor,
                              double small, const std::function<llvm::Value*(llvm::Value*)>& large) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(x->getType());
  auto f = [&](double v) { return llvm::ConstantFP::get(vt, v); };
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* p = f(taylor.back());
  for (size_t k = taylor.size() - 1; k-- > 0;)
    p = b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {p, x2, f(taylor[k])});
  llvm::Value* near = b.CreateFMul(x, p);
  llvm::Value* far = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large(a), x);
  return b.CreateSelect(b.CreateFCmpOLT(a, f(small)), near, far);
}

}  // namespace

VectorIsa VectorIsa::of(const llvm::TargetMachine& tm) {
  VectorIsa isa;
  isa.x86 = tm.getTargetTriple().isX86();
  isa.avx = isa.x86 && tm.getMCSubtargetInfo()->checkFeatures("+avx");
  isa.avx512 = isa.x86 && tm.getMCSubtargetInfo()->checkFeatures("+avx512f");
  if (isa.x86 && tm.getMCSubtargetInfo()->checkFeatures("+avx512vnni"))
    isa.vnni_lanes = 16;
  else if (isa.x86 && tm.getMCSubtargetInfo()->checkFeatures("+avxvnni"))
    isa.vnni_lanes = 8;
  if (isa.avx512 && tm.getMCSubtargetInfo()->checkFeatures("+avx512bw"))
    isa.pmaddwd_lanes = 16;
  else if (isa.x86 && tm.getMCSubtargetInfo()->checkFeatures("+avx2"))
    isa.pmaddwd_lanes = 8;
  return isa;
}

llvm::Value* vector_reciprocal_f32(llvm::IRBuilder<>& b, llvm::Value* d, const VectorIsa& isa) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(d->getType());
  auto f = [&](double v) { return llvm::ConstantFP::get(vt, v); };
  const unsigned lanes = vt->getNumElements();
  // The widest estimate whose lanes divide the vector's, in a power of two of parts.
  unsigned width = 0;
  for (unsigned w : {16u, 8u, 4u}) {
    const bool has = w == 16 ? isa.avx512 : w == 8 ? isa.avx : isa.x86;
    if (has && splits_into(lanes, w)) {
      width = w;
      break;
    }
  }
  if (width == 0) return b.CreateFDiv(f(1.0), d);
  d = b.CreateSelect(b.CreateFCmpOGT(d, f(1e38)), f(1e38), d);  // NaN stays NaN
  llvm::Value* r = in_parts(b, width, {d}, [&](const std::vector<llvm::Value*>& a) -> llvm::Value* {
    if (width == 16)
      return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_rcp14_ps_512, {},
                               {a[0], a[0], b.getInt16(uint16_t(0xffff))});
    return b.CreateIntrinsic(
        width == 8 ? llvm::Intrinsic::x86_avx_rcp_ps_256 : llvm::Intrinsic::x86_sse_rcp_ps, {}, {a[0]});
  });
  // Newton steps r + r (1 - d r), each squaring the relative error: one
  // after vrcp14ps (2^-14), two after rcpps (1.5 * 2^-12).
  for (int step = 0; step < (width == 16 ? 1 : 2); ++step) {
    llvm::Value* e = b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {b.CreateFNeg(d), r, f(1.0)});
    r = b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {r, e, r});
  }
  return r;
}

llvm::Value* vector_sigmoid_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa) {
  // e^-x for -x in [-87, 88]: 2^k stays normal, one scale instead of
  // exp's two, and no overflow (at most 1.7e38); 1 / (1 + e^-x) is 1 within
  // rounding from x = 17 and below 1e-38 at x = -87. A NaN passes the clamp.
  auto* vt = llvm::cast<llvm::FixedVectorType>(x->getType());
  llvm::Value* c = clamp_keeping_nan(b, b.CreateFNeg(x), -87.0, 88.0);
  llvm::Value* k = nullptr;
  llvm::Value* p = exp_reduced(b, c, &k);
  llvm::Value* e;
  if (has_scalef(isa, vt)) {
    e = scale_by_pow2(b, p, k);
  } else {
    auto* it = llvm::FixedVectorType::get(b.getInt32Ty(), vt->getNumElements());
    e = b.CreateFMul(p, pow2_f32(b, b.CreateFPToSI(k, it), vt));
  }
  return vector_reciprocal_f32(b, b.CreateFAdd(llvm::ConstantFP::get(vt, 1.0), e), isa);
}

llvm::Value* vector_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa) {
  // 2 / sqrt(pi) (-1)^k / (k! (2k + 1)), k = 0..10: the last is 1.5e-8.
  std::vector<double> taylor;
  double factorial = 1;
  for (int k = 0; k <= 10; ++k) {
    if (k > 0) factorial *= k;
    taylor.push_back((k % 2 ? -1 : 1) * 1.12837916709551257390 / (factorial * (2 * k + 1)));
  }
  return odd_function_f32(b, x, taylor, 1.0, [&](llvm::Value* a) {
    auto* vt = llvm::cast<llvm::FixedVectorType>(a->getType());
    auto f = [&](double v) { return llvm::ConstantFP::get(vt, v); };
    llvm::Value* t = vector_reciprocal_f32(
        b, b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {a, f(0.3275911), f(1.0)}), isa);
    llvm::Value* q = f(1.061405429);
    for (double c : {-1.453152027, 1.421413741, -0.284496736, 0.254829592})
      q = b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {q, t, f(c)});
    llvm::Value* e = vector_exp_f32(b, b.CreateFNeg(b.CreateFMul(a, a)), isa);
    return b.CreateFSub(f(1.0), b.CreateFMul(b.CreateFMul(q, t), e));
  });
}

llvm::Value* vector_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa) {
  // tanh's Taylor coefficients to x^15 (the next term is 5e-9 at |x| = 1/2).
  const std::vector<double> taylor = {
      1.0,         -1.0 / 3,         2.0 / 15,          -17.0 / 315,
      62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075, -929569.0 / 638512875};
  return odd_function_f32(b, x, taylor, 0.5, [&](llvm::Value* a) {
    auto* vt = llvm::cast<llvm::FixedVectorType>(a->getType());
    auto f = [&](double v) { return llvm::ConstantFP::get(vt, v); };
    llvm::Value* e = vector_exp_f32(b, b.CreateFAdd(a, a), isa);
    return b.CreateFSub(f(1.0), b.CreateFMul(f(2.0), vector_reciprocal_f32(b, b.CreateFAdd(e, f(1.0)), isa)));
  });
}

llvm::Value* math_intrinsic(llvm::Module& m, llvm::IRBuilder<>& b, tir::Intrinsic i, tir::DataType t,
                            const std::vector<llvm::Value*>& args, const VectorIsa& isa) {
  using I = tir::Intrinsic;
  const bool f32_vector = t.is_vector() && t.is_float() && t.bits == 32;
  llvm::Type* elem = args.empty() ? nullptr : args[0]->getType()->getScalarType();
  switch (i) {
    case I::Abs:
      if (t.is_float()) return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args[0]);
      if (t.is_uint()) return args[0];
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, args[0], b.getFalse());
    case I::Exp:
      return f32_vector ? vector_exp_f32(b, args[0], isa)
                        : b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, args[0]);
    case I::Sigmoid: {
      if (f32_vector) return vector_sigmoid_f32(b, args[0], isa);
      llvm::Value* one = llvm::ConstantFP::get(args[0]->getType(), 1.0);
      llvm::Value* e = b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b.CreateFNeg(args[0]));
      return b.CreateFDiv(one, b.CreateFAdd(one, e));
    }
    case I::Sqrt:
    case I::Log:
    case I::Sin:
    case I::Cos:
    case I::Floor:
    case I::Ceil:
    case I::Round: {
      // One LLVM intrinsic each (round: roundeven).
      static const std::pair<I, llvm::Intrinsic::ID> kUnary[] = {
          {I::Sqrt, llvm::Intrinsic::sqrt},      {I::Log, llvm::Intrinsic::log},
          {I::Sin, llvm::Intrinsic::sin},        {I::Cos, llvm::Intrinsic::cos},
          {I::Floor, llvm::Intrinsic::floor},    {I::Ceil, llvm::Intrinsic::ceil},
          {I::Round, llvm::Intrinsic::roundeven}};
      for (const auto& [tir_id, llvm_id] : kUnary)
        if (tir_id == i) return b.CreateUnaryIntrinsic(llvm_id, args[0]);
      return nullptr;
    }
    case I::Pow:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0], args[1]);
    case I::Fmod: {
      // The C library's double fmod, lane by lane: exact, so float32's
      // through double equals fmodf (the reference's).
      llvm::Type* f64 = b.getDoubleTy();
      llvm::FunctionCallee fn =
          m.getOrInsertFunction("fmod", llvm::FunctionType::get(f64, {f64, f64}, false));
      auto lane = [&](llvm::Value* x, llvm::Value* y) {
        llvm::Value* r = b.CreateCall(fn, {b.CreateFPCast(x, f64), b.CreateFPCast(y, f64)});
        return b.CreateFPCast(r, x->getType());
      };
      auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(args[0]->getType());
      if (!vt) return lane(args[0], args[1]);
      llvm::Value* out = llvm::PoisonValue::get(vt);
      for (unsigned k = 0; k < vt->getNumElements(); ++k)
        out = b.CreateInsertElement(
            out,
            lane(b.CreateExtractElement(args[0], uint64_t(k)), b.CreateExtractElement(args[1], uint64_t(k))),
            uint64_t(k));
      return out;
    }
    // No LLVM intrinsic: inline for float32 vectors, else the C library's
    // function, per lane.
    case I::Tanh:
      return f32_vector ? vector_tanh_f32(b, args[0], isa)
                        : libm_call(m, b, elem, t.bits == 32 ? "tanhf" : "tanh", args[0]);
    case I::Erf:
      return f32_vector ? vector_erf_f32(b, args[0], isa)
                        : libm_call(m, b, elem, t.bits == 32 ? "erff" : "erf", args[0]);
    // The C library's double function, lane by lane, rounded once: the
    // reference kernels' values exactly (rare ops; no vector forms).
    case I::Tan:
    case I::Asin:
    case I::Acos:
    case I::Atan:
    case I::Sinh:
    case I::Cosh:
    case I::Asinh:
    case I::Acosh:
    case I::Atanh: {
      llvm::Type* wide = args[0]->getType()->getWithNewType(b.getDoubleTy());
      llvm::Value* y =
          libm_call(m, b, b.getDoubleTy(), tir::intrinsic_name(i), b.CreateFPCast(args[0], wide));
      return b.CreateFPCast(y, args[0]->getType());
    }
    default:
      return nullptr;
  }
}

namespace {

// acc plus, in each int32 lane i, the `group` products a[group * i + k] *
// w[group * i + k], widened to int32 (a zero-extended when `a_unsigned`):
// the dot products where no instruction computes them.
llvm::Value* widened_dot(llvm::IRBuilder<>& b, llvm::Value* acc, llvm::Value* a, llvm::Value* w,
                         bool a_unsigned, unsigned group) {
  const unsigned lanes = llvm::cast<llvm::FixedVectorType>(acc->getType())->getNumElements();
  llvm::Type* wide = llvm::FixedVectorType::get(b.getInt32Ty(), group * lanes);
  llvm::Value* products =
      b.CreateMul(a_unsigned ? b.CreateZExt(a, wide) : b.CreateSExt(a, wide), b.CreateSExt(w, wide));
  llvm::Value* sum = acc;
  for (unsigned k = 0; k < group; ++k) {
    std::vector<int> pick;
    for (unsigned i = 0; i < lanes; ++i) pick.push_back(int(group * i + k));
    sum = b.CreateAdd(sum, b.CreateShuffleVector(products, pick));
  }
  return sum;
}

}  // namespace

llvm::Value* dot_i8x4(llvm::IRBuilder<>& b, llvm::Value* acc, llvm::Value* a, llvm::Value* w, bool a_unsigned,
                      bool hexagon, unsigned vnni_lanes) {
  auto* acc_type = llvm::cast<llvm::FixedVectorType>(acc->getType());
  const unsigned lanes = acc_type->getNumElements();
  if (a_unsigned && vnni_lanes == lanes) {
    // One vpdpbusd: the operands as int32 words of four bytes.
    const llvm::Intrinsic::ID dot =
        lanes == 16 ? llvm::Intrinsic::x86_avx512_vpdpbusd_512 : llvm::Intrinsic::x86_avx512_vpdpbusd_256;
    llvm::Type* words = llvm::FixedVectorType::get(b.getInt32Ty(), lanes);
    return b.CreateIntrinsic(dot, {}, {acc, b.CreateBitCast(a, words), b.CreateBitCast(w, words)});
  }
  if (hexagon && lanes == 32) {
    // Vd.w += vrmpy(Vu.b, Vv.b): the operands as 32 words of four bytes.
    llvm::Type* words = llvm::FixedVectorType::get(b.getInt32Ty(), 32);
    return b.CreateIntrinsic(llvm::Intrinsic::hexagon_V6_vrmpybv_acc_128B, {},
                             {acc, b.CreateBitCast(a, words), b.CreateBitCast(w, words)});
  }
  return widened_dot(b, acc, a, w, a_unsigned, 4);
}

llvm::Value* dot_i16x2(llvm::IRBuilder<>& b, llvm::Value* acc, llvm::Value* a, llvm::Value* w,
                       unsigned pmaddwd_lanes) {
  const unsigned lanes = llvm::cast<llvm::FixedVectorType>(acc->getType())->getNumElements();
  if (lanes == pmaddwd_lanes && (lanes == 8 || lanes == 16)) {
    const llvm::Intrinsic::ID madd =
        lanes == 16 ? llvm::Intrinsic::x86_avx512_pmaddw_d_512 : llvm::Intrinsic::x86_avx2_pmadd_wd;
    return b.CreateAdd(acc, b.CreateIntrinsic(madd, {}, {a, w}));
  }
  return widened_dot(b, acc, a, w, false, 2);
}

// The span is a whole number of vectors, which LLVM shuffles register by
// register (the lane-exact span, one element shorter, split AVX2's upper
// half into single-element inserts).
llvm::Value* load_clamped_run(llvm::IRBuilder<>& b, llvm::Type* elem, llvm::Value* base, llvm::Align align,
                              llvm::Value* first, llvm::Value* offset, const ClampedRun& run,
                              unsigned lanes) {
  llvm::Type* index_type = first->getType();
  auto constant = [&](int64_t v) { return llvm::ConstantInt::get(index_type, uint64_t(v)); };
  if (!offset) offset = constant(0);
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  const unsigned span = lanes * unsigned(run.stride);
  auto* span_type = llvm::FixedVectorType::get(elem, span);
  llvm::Value* last = b.CreateAdd(first, constant(int64_t(span) - 1));
  llvm::Value* inside =
      b.CreateAnd(b.CreateICmpSGE(first, constant(run.lo)), b.CreateICmpSLE(last, constant(run.hi)));
  auto* whole_bb = llvm::BasicBlock::Create(ctx, "run_inside", fn);
  auto* edge_bb = llvm::BasicBlock::Create(ctx, "run_at_edge", fn);
  auto* done_bb = llvm::BasicBlock::Create(ctx, "run_loaded", fn);
  llvm::Value* start = b.CreateAdd(offset, first);
  b.CreateCondBr(inside, whole_bb, edge_bb);
  b.SetInsertPoint(whole_bb);
  llvm::Value* whole = b.CreateAlignedLoad(span_type, b.CreateInBoundsGEP(elem, base, start), align);
  b.CreateBr(done_bb);
  b.SetInsertPoint(edge_bb);
  // The element an unclamped index `at` reads.
  auto clamped_element = [&](llvm::Value* at) {
    llvm::Value* clamped =
        b.CreateSelect(b.CreateICmpSLT(at, constant(run.lo)), constant(run.lo),
                       b.CreateSelect(b.CreateICmpSGT(at, constant(run.hi)), constant(run.hi), at));
    llvm::Value* p = b.CreateInBoundsGEP(elem, base, b.CreateAdd(offset, clamped));
    return b.CreateAlignedLoad(elem, p, align);
  };
  // The span's unclamped indices; the pointer of the masked load may lie
  // outside the buffer (its masked-off elements are not read), so a plain GEP.
  llvm::SmallVector<llvm::Constant*, 64> steps;
  for (unsigned l = 0; l < span; ++l) steps.push_back(constant(int64_t(l)));
  llvm::Value* at = b.CreateAdd(b.CreateVectorSplat(span, first), llvm::ConstantVector::get(steps));
  auto splat = [&](int64_t v) { return b.CreateVectorSplat(span, constant(v)); };
  llvm::Value* below = b.CreateICmpSLT(at, splat(run.lo));
  llvm::Value* mask = b.CreateAnd(b.CreateNot(below), b.CreateICmpSLE(at, splat(run.hi)));
  llvm::Value* ends = b.CreateSelect(below, b.CreateVectorSplat(span, clamped_element(first)),
                                     b.CreateVectorSplat(span, clamped_element(last)));
  llvm::Value* edge = b.CreateMaskedLoad(span_type, b.CreateGEP(elem, base, start), align, mask, ends);
  b.CreateBr(done_bb);
  b.SetInsertPoint(done_bb);
  llvm::PHINode* phi = b.CreatePHI(span_type, 2);
  phi->addIncoming(whole, whole_bb);
  phi->addIncoming(edge, edge_bb);
  if (run.stride == 1) return phi;
  llvm::SmallVector<int, 64> pick;
  for (unsigned l = 0; l < lanes; ++l) pick.push_back(int(int64_t(l) * run.stride));
  return b.CreateShuffleVector(phi, pick);
}

}  // namespace kiln::codegen
