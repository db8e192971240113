// What the LLVM codegen's files share (src/codegen only; includes LLVM).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/codegen.h"

namespace kiln::codegen {

// The vector instructions of the target that codegen picks by hand.
struct VectorIsa {
  bool x86 = false;
  bool avx = false;     // 8-lane float32 registers
  bool avx512 = false;  // 16-lane float32 registers and mask registers
  // vpdpbusd's int32 lanes: 16 with AVX-512 VNNI, 8 with AVX-VNNI or
  // AVX-512 VNNI and VL, 0 without.
  unsigned vnni_lanes = 0;
  // vpmaddwd's int32 lanes: 16 with AVX-512BW, 8 with AVX2, 0 without.
  unsigned pmaddwd_lanes = 0;
  static VectorIsa of(const llvm::TargetMachine& tm);
};

// Registers LLVM's native and Hexagon targets, once.
void init_llvm();
// LLVM's command-line options kiln sets (Hexagon's HVX and small data): by
// init_llvm, and again after each in-process link, which resets them all.
void set_llvm_options();
// LLVM's loop strength reduction off for host code, on for Hexagon (a
// process-wide option: set by each codegen entry point before it compiles,
// outside any threads it starts).
void use_loop_strength_reduction(const Target& t);
// A target machine for `t` (the host: this CPU and its features).
std::unique_ptr<llvm::TargetMachine> target_machine(const Target& t, int opt_level);
// Runs kiln's pipeline for `tm` on `m` (llvm_pipeline.cc): for the host at
// O2 a short one after kiln's own vectorization, else LLVM's default.
void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level, bool loop_vectorize,
              std::string* pass_times = nullptr);
// Drops LLVM's warnings about requests it could not honour (a loop left
// scalar) and collects its errors, which emit_machine_code throws.
void quiet_optimization_failures(llvm::LLVMContext& ctx);
// The LLVM module of `funcs`, verified and optimized. With `import_slots`,
// runtime-ABI calls go through exported slots (runtime/host_code.h), whose
// symbols are returned there.
std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, const std::vector<tir::PrimFunc>& funcs,
                                           llvm::TargetMachine& tm, const CodegenOptions& options,
                                           bool with_harness = false,
                                           std::vector<std::string>* import_slots = nullptr);
// Calls of runtime-ABI functions through exported pointers
// `kiln_import_<symbol>` the loader fills (host_object.cc); the symbols.
std::vector<std::string> use_import_slots(llvm::Module& m);
// Machine code for `m` into `out` (assembly or object).
void emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, llvm::raw_pwrite_stream& out,
                       llvm::CodeGenFileType type, std::string* pass_times = nullptr);
std::string llvm_error(llvm::Error e);
// The Hexagon harness table of `funcs` (hexagon_harness.cc), for
// build_module's `with_harness`.
void add_hexagon_harness(llvm::Module& m, const std::vector<tir::PrimFunc>& funcs, uint64_t vtcm_capacity);
// A vector index as one scalar plus a constant offset per lane, when its
// form shows one: broadcasts, ramps of a constant stride, their sums and
// multiples, and / or mod by a constant of offsets with no scalar part
// (vector_ops.cc). A load reads such lanes as one span and a shuffle.
struct LanePattern {
  tir::Expr scalar;
  std::vector<int64_t> offsets;
  // The step between consecutive lanes when it is one step throughout; 0
  // otherwise (and for one lane).
  int64_t uniform_stride() const;
  // G = 4 or 2 when lane l is at (l % G) * S + l / G from the first: G rows
  // of lanes / G contiguous elements, S >= lanes / G apart, interleaved (a
  // uint8 conv's window of four input channels a column, read from NCHW);
  // 0 otherwise.
  int64_t interleaved_rows() const;
};
std::optional<LanePattern> lane_pattern(const tir::Expr& e);
// `index` as a variable part (returned) plus a constant (*offset); null
// when the index is a constant. Sums are split, and a constant times a
// sum with a constant term ((r + 3) * 2880) is distributed.
tir::Expr without_constant(const tir::Expr& index, int64_t* offset);
// The remainder of an integer index by `m` (a power of two) when its form
// shows it: constants, sums, differences and products, through the let
// bindings in `lets` (share-common-subexpressions adds them); nullopt
// otherwise.
std::optional<int64_t> known_remainder(const tir::Expr& e, int64_t m,
                                       const std::unordered_map<const tir::VarNode*, tir::Expr>& lets);
// The columns of the square matrix whose rows are `rows` (L vectors of L
// lanes, L a power of two): log2 L rounds of two-register shuffles, each
// swapping the off-diagonal h x h blocks of every 2h x 2h one.
std::vector<llvm::Value*> transposed_columns(llvm::IRBuilderBase& b, std::vector<llvm::Value*> rows);
// A vector index that is a run clamped into [lo, hi], plus lane-invariant
// terms: offset + min(max(ramp(base, stride, lanes), lo), hi) (a padded
// input's row or a resize's source row, read through clamp_index; stride
// 2 to 4: every other column, as a strided conv's phases read them). A
// load reads the run's span (lanes * stride elements) as one vector where
// it lies inside [lo, hi], else with a masked load and the two end
// elements, then picks every stride-th element (vector_ops.cc).
struct ClampedRun {
  tir::Expr offset;  // null: no lane-invariant part
  tir::Expr base;
  int64_t lo, hi;
  int64_t stride = 1;
};
std::optional<ClampedRun> clamped_run(const tir::Expr& e,
                                      const std::unordered_map<const tir::VarNode*, tir::Expr>& lets);
// The lanes of `p` (interleaved_rows() != 0) from `base` (elements of type
// `elem`, aligned to `align`), `scalar` its scalar as a value: one load per
// row and one interleaving shuffle.
llvm::Value* load_interleaved_rows(llvm::IRBuilder<>& b, llvm::Type* elem, llvm::Value* base,
                                   llvm::Align align, llvm::Value* scalar, const LanePattern& p);
// The `lanes` lanes of `run` from `base` (elements of type `elem`, aligned
// to `align`), `first` and `offset` being its base and offset as values
// (offset null: none): the span in one load where it lies inside [lo, hi]
// (every run of a padded row but the first and last), else a masked load
// of the elements inside, those below lo taking element lo and those above
// hi element hi; then every stride-th element. Branches on which: the
// builder continues in the block after both.
llvm::Value* load_clamped_run(llvm::IRBuilder<>& b, llvm::Type* elem, llvm::Value* base, llvm::Align align,
                              llvm::Value* first, llvm::Value* offset, const ClampedRun& run, unsigned lanes);
// exp of each float32 lane, inline, so it stays in vector registers (LLVM
// lowers a vector llvm.exp to one expf call per lane): x = k ln 2 + r with
// k = round(x / ln 2) and |r| <= ln 2 / 2 (ln 2 in two parts, so r is
// exact), e^r by the degree-6 minimax polynomial of the Cephes library
// (within 2 ulp), times 2^k: by AVX-512's vscalefps where the target has
// it, else built in the exponent bits as two halves so each stays a normal
// number. x is clamped to [-104, 89] first (e^x is 0 below, infinite above,
// and the product rounds to those); NaN stays NaN.
llvm::Value* vector_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa);
// The transposed blocks of rows a function's loads have read so far
// (transposed_load in llvm_codegen.cc), found by the form of their origin:
// valid in the basic block that loaded them, until a store that may write
// their buffer or a call.
class TransposedRows {
 public:
  // The key of the L x L block at rows origin + offset + k * stride (origin
  // null: none), k < L = `lanes`.
  static std::string key(const tir::Expr& origin, int64_t offset, int64_t stride, int64_t lanes);
  // The block's columns, or null when it was not loaded in `block`.
  const std::vector<llvm::Value*>* find(llvm::BasicBlock* block, llvm::Value* base,
                                        const std::string& key) const;
  const std::vector<llvm::Value*>& add(llvm::BasicBlock* block, llvm::Value* base, std::string key,
                                       std::vector<llvm::Value*> columns);
  // After a store to `base`: forgets the blocks it may have written, all but
  // those of other noalias arguments and stack buffers.
  void forget_written(llvm::Value* base);
  void clear() { blocks_.clear(); }

 private:
  struct Block {
    llvm::BasicBlock* block;
    llvm::Value* base;
    std::string key;
    std::vector<llvm::Value*> columns;
  };
  std::vector<Block> blocks_;
};
// `e` with every let-bound variable replaced by its value, recursively.
tir::Expr without_lets(tir::Expr e, const std::unordered_map<const tir::VarNode*, tir::Expr>& lets);
// The C library's function `symbol` (of one `elem` argument) applied to v,
// lane by lane when v is a vector.
llvm::Value* libm_call(llvm::Module& m, llvm::IRBuilderBase& b, llvm::Type* elem, const std::string& symbol,
                       llvm::Value* v);
// erf and tanh of each float32 lane, inline (the C library's erff and
// tanhf were called once per lane: BERT's GELU took as long as its matmul).
// Both are odd: below |x| = 1 (erf) or 1/2 (tanh) the Taylor series of
// the function, where it loses no digits (relative error under 1e-7);
// above, from vector_exp_f32: erf(x) = 1 - (a1 t + ... + a5 t^5) e^(-x^2)
// with t = 1 / (1 + p |x|) (Abramowitz and Stegun 7.1.26, absolute error
// under 1.5e-7), tanh(x) = 1 - 2 / (e^(2|x|) + 1), with x's sign. Infinite
// x gives +-1, NaN stays NaN.
// Their divisions (and sigmoid's, below) take vector_reciprocal_f32.
llvm::Value* vector_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa);
llvm::Value* vector_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa);
// 1 / (1 + e^-x) of each float32 lane: under 1e-38 below x = -87, 1 within
// rounding above 17, NaN stays NaN (e^-x from exp's reduction with -x
// clamped to [-87, 88], so 2^k is one normal number).
llvm::Value* vector_sigmoid_f32(llvm::IRBuilder<>& b, llvm::Value* x, const VectorIsa& isa);
// 1 / d of each float32 lane, for d >= 1 or NaN (the denominators above):
// where the target has a reciprocal estimate (x86: rcpps, 12 bits, for 4 and
// 8 lanes; vrcp14ps, 14 bits, for 16 with AVX-512) the estimate and one
// Newton steps (d clamped to 1e38 first, so that infinity gives 1e-38, not
// NaN), within 2 ulp of the quotient; else a division. A division of
// vectors costs 5 to 10 cycles per register on current cores, the estimate
// and its step three operations: with the division the sigmoid of a conv's
// output took longer than the conv.
llvm::Value* vector_reciprocal_f32(llvm::IRBuilder<>& b, llvm::Value* d, const VectorIsa& isa);
// A math intrinsic of tensor IR (abs, exp, sigmoid, sqrt, log, sin, cos,
// floor, ceil, round, pow, tanh, erf) of `args`, whose type is `t`: LLVM's
// intrinsic, the inline forms above for float32 vectors (exp, sigmoid,
// tanh, erf), else the C library's function per lane (tanh, erf). Null for
// the other intrinsics.
llvm::Value* math_intrinsic(llvm::Module& m, llvm::IRBuilder<>& b, tir::Intrinsic i, tir::DataType t,
                            const std::vector<llvm::Value*>& args, const VectorIsa& isa);
// dot_i8x4 (tir.h): each int32 lane of `acc` plus the four products of its
// int8 (or, `a_unsigned`, uint8) lanes of `a` and int8 lanes of `b`. On
// Hexagon with 32 lanes one HVX V6_vrmpybv_acc (vrmpy); unsigned by signed
// on x86 with VNNI one vpdpbusd when the lanes are its (`vnni_lanes`);
// elsewhere the products widened and summed by fours.
llvm::Value* dot_i8x4(llvm::IRBuilder<>& b, llvm::Value* acc, llvm::Value* a, llvm::Value* w, bool a_unsigned,
                      bool hexagon, unsigned vnni_lanes);
// dot_i16x2 (tir.h): each int32 lane of `acc` plus the two products of its
// int16 lanes of `a` and `b`: one vpmaddwd and an add when the lanes are
// its (`pmaddwd_lanes`), elsewhere the products widened and summed by pairs.
llvm::Value* dot_i16x2(llvm::IRBuilder<>& b, llvm::Value* acc, llvm::Value* a, llvm::Value* w,
                       unsigned pmaddwd_lanes);

}  // namespace kiln::codegen
