// The tensor-level IR: `prim` functions over buffers, loops and scalars.
//
// A prim function is what a kernel looks like after scheduling: explicit loops
// over buffers in memory scopes, scalar and vector arithmetic, calls to
// intrinsics and to extern C functions. It is printed inside a module next to
// graph functions:
//
//   prim @add(%A: Buffer[(2048), int8], %B: Buffer[(2048), int8], %C: Buffer[(2048), int8]) {
//     allocate %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
//     for %i from 0 extent 2048 {
//       %A_buf[%i] = %A[%i]
//     }
//     ...
//     return 0
//   }
//
// Nodes are plain immutable structs held by shared_ptr<const ...>; passes
// build new nodes. Variables and buffers are identified by their node, and
// their names are unique within a function (the verifier checks it), so the
// text round-trips exactly. A prim function returns int32: 0 on success, and a
// non-zero code after it has set the runtime's last error (backend_api.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/dtype.h"
#include "kiln/runtime/error.h"

namespace kiln::tir {

// ---------------------------------------------------------------- scalar and vector types

// An element type with a lane count (lanes > 1: a vector). Handle is an
// opaque pointer (a buffer's data, the result of an allocation).
struct DataType {
  enum class Code : uint8_t { Int, UInt, Float, Bool, Handle };
  Code code = Code::Int;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  static DataType int_(int bits, int lanes = 1) { return {Code::Int, uint8_t(bits), uint16_t(lanes)}; }
  static DataType uint(int bits, int lanes = 1) { return {Code::UInt, uint8_t(bits), uint16_t(lanes)}; }
  static DataType float_(int bits, int lanes = 1) { return {Code::Float, uint8_t(bits), uint16_t(lanes)}; }
  static DataType bool_(int lanes = 1) { return {Code::Bool, 1, uint16_t(lanes)}; }
  static DataType handle() { return {Code::Handle, 64, 1}; }
  static DataType int32() { return int_(32); }
  static DataType int64() { return int_(64); }
  static DataType uint32() { return uint(32); }
  static DataType float32() { return float_(32); }

  bool is_int() const { return code == Code::Int; }
  bool is_uint() const { return code == Code::UInt; }
  bool is_integer() const { return code == Code::Int || code == Code::UInt; }
  bool is_float() const { return code == Code::Float; }
  bool is_bool() const { return code == Code::Bool; }
  bool is_handle() const { return code == Code::Handle; }
  bool is_vector() const { return lanes > 1; }
  DataType element() const { return {code, bits, 1}; }
  DataType with_lanes(int n) const { return {code, bits, uint16_t(n)}; }
  // Storage bytes of one element (bool takes a byte), times lanes.
  int64_t bytes() const { return int64_t(code == Code::Bool ? 1 : bits / 8) * lanes; }

  bool operator==(const DataType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

// "int32", "uint8", "float32x8", "bool", "handle".
std::string dtype_str(DataType t);
std::optional<DataType> parse_dtype(std::string_view s);
// The tensor element type as a tensor-IR type (Bool becomes bool).
DataType from_dtype(DType t);

// ---------------------------------------------------------------- memory scopes

// Where a buffer lives. The scratchpad scopes are the Hexagon VTCM: allocating
// there goes through the runtime's VTCM pool and counts against the target's
// capacity.
#define KILN_TIR_MEMORY_SCOPES(X)               \
  X(Global, "global", false) /* main memory */  \
  X(Local, "local", false)   /* thread-local */ \
  X(GlobalVTCM, "global.vtcm", true)            \
  X(LocalVTCM, "local.vtcm", true)

enum class MemoryScope : uint8_t {
#define KILN_TIR_SCOPE_ENTRY(name, text, scratch) name,
  KILN_TIR_MEMORY_SCOPES(KILN_TIR_SCOPE_ENTRY)
#undef KILN_TIR_SCOPE_ENTRY
};
inline constexpr int kNumMemoryScopes = 4;

const char* scope_name(MemoryScope s);
std::optional<MemoryScope> scope_from_name(std::string_view s);
bool is_scratchpad(MemoryScope s);
bool is_valid_scope(MemoryScope s);  // false for a value outside the enum
// "global, local, global.vtcm, local.vtcm", for messages.
std::string scope_names();

// ---------------------------------------------------------------- expressions

#define KILN_TIR_EXPR_KINDS(X)         \
  /* leaves */                         \
  X(IntImm)                            \
  X(FloatImm)                          \
  X(StringImm)                         \
  X(Var)                               \
  /* arithmetic, comparisons, logic */ \
  X(Binary)                            \
  X(Not)                               \
  X(Cast)                              \
  X(Select)                            \
  /* memory and calls */               \
  X(BufferLoad)                        \
  X(Call)                              \
  /* vectors */                        \
  X(Ramp)                              \
  X(Broadcast)

enum class ExprKind : uint8_t {
#define KILN_TIR_ENUM_ENTRY(name) name,
  KILN_TIR_EXPR_KINDS(KILN_TIR_ENUM_ENTRY)
#undef KILN_TIR_ENUM_ENTRY
};

// Binary operators: name, text, whether the text is infix (else it is
// written like a call: min(a, b)). The shared lexer has no '!', '&' or '|'. Div and Mod
// truncate toward zero on integers (C semantics). Shl and Shr shift integers
// (Shr: logically for unsigned types, arithmetically for signed ones) by an
// amount in [0, bits); another amount leaves the result unspecified.
#define KILN_TIR_BINARY_OPS(X) \
  X(Add, "+", true)            \
  X(Sub, "-", true)            \
  X(Mul, "*", true)            \
  X(Div, "/", true)            \
  X(Mod, "mod", false)         \
  X(Min, "min", false)         \
  X(Max, "max", false)         \
  X(EQ, "==", true)            \
  X(NE, "ne", false)           \
  X(LT, "<", true)             \
  X(LE, "<=", true)            \
  X(GT, ">", true)             \
  X(GE, ">=", true)            \
  X(And, "and", false)         \
  X(Or, "or", false)           \
  X(Shl, "shl", false)         \
  X(Shr, "shr", false)

enum class BinaryOp : uint8_t {
#define KILN_TIR_ENUM_ENTRY(name, text, infix) name,
  KILN_TIR_BINARY_OPS(KILN_TIR_ENUM_ENTRY)
#undef KILN_TIR_ENUM_ENTRY
};
const char* binary_op_text(BinaryOp op);
bool is_infix(BinaryOp op);
bool is_comparison(BinaryOp op);  // EQ..GE: result is bool
bool is_logical(BinaryOp op);     // And, Or
bool is_shift(BinaryOp op);       // Shl, Shr: integers only

struct ExprNode {
  ExprKind kind;
  DataType dtype;
  ExprNode(ExprKind k, DataType t) : kind(k), dtype(t) {}
  virtual ~ExprNode() = default;
};
using Expr = std::shared_ptr<const ExprNode>;

struct IntImmNode : ExprNode {
  int64_t value;
  IntImmNode(DataType t, int64_t v) : ExprNode(ExprKind::IntImm, t), value(v) {}
};
struct FloatImmNode : ExprNode {
  double value;
  FloatImmNode(DataType t, double v) : ExprNode(ExprKind::FloatImm, t), value(v) {}
};
// Only as an argument of a call (an error message, for instance).
struct StringImmNode : ExprNode {
  std::string value;
  explicit StringImmNode(std::string v)
      : ExprNode(ExprKind::StringImm, DataType::handle()), value(std::move(v)) {}
};
struct VarNode : ExprNode {
  std::string name;  // without '%'
  VarNode(std::string n, DataType t) : ExprNode(ExprKind::Var, t), name(std::move(n)) {}
};
using Var = std::shared_ptr<const VarNode>;

struct BinaryNode : ExprNode {
  BinaryOp op;
  Expr a, b;
  BinaryNode(DataType t, BinaryOp o, Expr x, Expr y)
      : ExprNode(ExprKind::Binary, t), op(o), a(std::move(x)), b(std::move(y)) {}
};
struct NotNode : ExprNode {
  Expr a;
  explicit NotNode(Expr x) : ExprNode(ExprKind::Not, x->dtype), a(std::move(x)) {}
};
struct CastNode : ExprNode {
  Expr value;
  CastNode(DataType t, Expr v) : ExprNode(ExprKind::Cast, t), value(std::move(v)) {}
};
struct SelectNode : ExprNode {
  Expr cond, true_value, false_value;
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(ExprKind::Select, t->dtype),
        cond(std::move(c)),
        true_value(std::move(t)),
        false_value(std::move(f)) {}
};

struct BufferNode;
using Buffer = std::shared_ptr<const BufferNode>;

// A load of buffer[indices]; with a Ramp index it loads a vector.
struct BufferLoadNode : ExprNode {
  Buffer buffer;
  std::vector<Expr> indices;
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> i)
      : ExprNode(ExprKind::BufferLoad, t), buffer(std::move(b)), indices(std::move(i)) {}
};

// Intrinsics are kiln's own operations (known to the verifier and codegen);
// extern calls go to a C function by symbol name, resolved at link time.
enum class CallKind : uint8_t { Intrinsic, Extern };

#define KILN_TIR_INTRINSICS(X)                                                                              \
  X(IsNull, "isnull")                  /* handle -> bool */                                                 \
  X(Abs, "abs")                        /* numeric */                                                        \
  X(Sqrt, "sqrt")                      /* float */                                                          \
  X(Exp, "exp")                        /* float */                                                          \
  X(Log, "log")                        /* float */                                                          \
  X(Tanh, "tanh")                      /* float */                                                          \
  X(Sigmoid, "sigmoid")                /* float: 1 / (1 + exp(-x)) */                                       \
  X(Erf, "erf")                        /* float */                                                          \
  X(Sin, "sin")                        /* float */                                                          \
  X(Cos, "cos")                        /* float */                                                          \
  X(Tan, "tan")                        /* float; this and the 8 below: the C library's, in double */        \
  X(Asin, "asin")                      /* float */                                                          \
  X(Acos, "acos")                      /* float */                                                          \
  X(Atan, "atan")                      /* float */                                                          \
  X(Sinh, "sinh")                      /* float */                                                          \
  X(Cosh, "cosh")                      /* float */                                                          \
  X(Asinh, "asinh")                    /* float */                                                          \
  X(Acosh, "acosh")                    /* float */                                                          \
  X(Atanh, "atanh")                    /* float */                                                          \
  X(Floor, "floor")                    /* float */                                                          \
  X(Ceil, "ceil")                      /* float */                                                          \
  X(Round, "round")                    /* float: to nearest, ties to even */                                \
  X(Pow, "pow")                        /* float, float -> float */                                          \
  X(Fmod, "fmod")                      /* float, float -> float: the C library's, exact, per lane */        \
  X(Likely, "likely")                  /* bool hint for branches */                                         \
  X(AddressOffset, "address_offset")   /* handle + int64 bytes -> handle */                                 \
  X(ParallelStatus, "parallel_status") /* -> int32: how the last parallel loop ended (tir/parallel.h) */    \
  X(DotI8x4, "dot_i8x4")   /* int32xN acc, (u)int8x4N a, int8x4N b -> acc[i] + sum_k<4 a[4i+k] * b[4i+k] */ \
  X(DotI16x2, "dot_i16x2") /* int32xN acc, int16x2N a, int16x2N b -> acc[i] + sum_k<2 a[2i+k] * b[2i+k] */

enum class Intrinsic : uint8_t {
#define KILN_TIR_ENUM_ENTRY(name, text) name,
  KILN_TIR_INTRINSICS(KILN_TIR_ENUM_ENTRY)
#undef KILN_TIR_ENUM_ENTRY
};
const char* intrinsic_name(Intrinsic i);
std::optional<Intrinsic> intrinsic_from_name(std::string_view s);

struct CallNode : ExprNode {
  CallKind call_kind;
  std::string name;  // the intrinsic's or the C symbol's name
  std::vector<Expr> args;
  CallNode(DataType t, CallKind k, std::string n, std::vector<Expr> a)
      : ExprNode(ExprKind::Call, t), call_kind(k), name(std::move(n)), args(std::move(a)) {}
};

// base, base + stride, ..., base + (lanes - 1) * stride.
struct RampNode : ExprNode {
  Expr base, stride;
  int lanes;
  RampNode(Expr b, Expr s, int l)
      : ExprNode(ExprKind::Ramp, b->dtype.with_lanes(l)),
        base(std::move(b)),
        stride(std::move(s)),
        lanes(l) {}
};
struct BroadcastNode : ExprNode {
  Expr value;
  int lanes;
  BroadcastNode(Expr v, int l)
      : ExprNode(ExprKind::Broadcast, v->dtype.with_lanes(l)), value(std::move(v)), lanes(l) {}
};

template <typename T>
const T* as(const Expr& e);
#define KILN_TIR_AS(name)                                                                      \
  template <>                                                                                  \
  inline const name##Node* as<name##Node>(const Expr& e) {                                     \
    return e && e->kind == ExprKind::name ? static_cast<const name##Node*>(e.get()) : nullptr; \
  }
KILN_TIR_EXPR_KINDS(KILN_TIR_AS)
#undef KILN_TIR_AS

// ---------------------------------------------------------------- buffers

inline constexpr int64_t kDefaultAlignment = 64;

// A typed view of memory. Strides are in elements; empty means dense row-major.
// `data` is the handle variable holding the base address.
struct BufferNode {
  std::string name;
  Var data;
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;
  int64_t alignment = kDefaultAlignment;  // bytes
  MemoryScope scope = MemoryScope::Global;

  // The number of elements when every extent is a constant, else nullopt.
  std::optional<int64_t> const_numel() const;
  std::optional<int64_t> const_bytes() const;
};

// A buffer with a fresh data variable named NAME_data.
Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape,
                   MemoryScope scope = MemoryScope::Global, int64_t alignment = kDefaultAlignment,
                   std::vector<Expr> strides = {}, Var data = nullptr);
// The name a buffer's implicit data variable gets.
std::string data_var_name(const std::string& buffer_name);

// ---------------------------------------------------------------- statements

#define KILN_TIR_STMT_KINDS(X)                                          \
  X(For)         /* a loop: serial, parallel, vectorized or unrolled */ \
  X(Allocate)    /* a buffer allocated for the body */                  \
  X(DeclBuffer)  /* a buffer over an existing data handle */            \
  X(BufferStore) /* buffer[indices] = value */                          \
  X(LetStmt)     /* var = value for the body */                         \
  X(IfThenElse)                                                         \
  X(Seq)      /* statements in order; never nested, never one */        \
  X(Evaluate) /* an expression for its effect (a call) */               \
  X(Return)   /* leaves the function with an int32 code */

enum class StmtKind : uint8_t {
#define KILN_TIR_ENUM_ENTRY(name) name,
  KILN_TIR_STMT_KINDS(KILN_TIR_ENUM_ENTRY)
#undef KILN_TIR_ENUM_ENTRY
};

struct StmtNode {
  StmtKind kind;
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
};
using Stmt = std::shared_ptr<const StmtNode>;

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled };
const char* for_kind_name(ForKind k);  // "serial", "parallel", "vectorized", "unrolled"

struct ForNode : StmtNode {
  Var var;
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  ForNode(Var v, Expr m, Expr e, ForKind k, Stmt b)
      : StmtNode(StmtKind::For),
        var(std::move(v)),
        min(std::move(m)),
        extent(std::move(e)),
        for_kind(k),
        body(std::move(b)) {}
};
struct AllocateNode : StmtNode {
  Buffer buffer;
  Stmt body;
  AllocateNode(Buffer buf, Stmt b)
      : StmtNode(StmtKind::Allocate), buffer(std::move(buf)), body(std::move(b)) {}
};
struct DeclBufferNode : StmtNode {
  Buffer buffer;
  Stmt body;
  DeclBufferNode(Buffer buf, Stmt b)
      : StmtNode(StmtKind::DeclBuffer), buffer(std::move(buf)), body(std::move(b)) {}
};
struct BufferStoreNode : StmtNode {
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
  BufferStoreNode(Buffer buf, std::vector<Expr> i, Expr v)
      : StmtNode(StmtKind::BufferStore), buffer(std::move(buf)), indices(std::move(i)), value(std::move(v)) {}
};
struct LetStmtNode : StmtNode {
  Var var;
  Expr value;
  Stmt body;
  LetStmtNode(Var v, Expr e, Stmt b)
      : StmtNode(StmtKind::LetStmt), var(std::move(v)), value(std::move(e)), body(std::move(b)) {}
};
struct IfThenElseNode : StmtNode {
  Expr cond;
  Stmt then_case;
  Stmt else_case;  // may be null
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(StmtKind::IfThenElse),
        cond(std::move(c)),
        then_case(std::move(t)),
        else_case(std::move(e)) {}
};
struct SeqNode : StmtNode {
  std::vector<Stmt> stmts;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(StmtKind::Seq), stmts(std::move(s)) {}
};
struct EvaluateNode : StmtNode {
  Expr value;
  explicit EvaluateNode(Expr v) : StmtNode(StmtKind::Evaluate), value(std::move(v)) {}
};
struct ReturnNode : StmtNode {
  Expr value;  // int32
  explicit ReturnNode(Expr v) : StmtNode(StmtKind::Return), value(std::move(v)) {}
};

template <typename T>
const T* as(const Stmt& s);
#define KILN_TIR_AS(name)                                                                      \
  template <>                                                                                  \
  inline const name##Node* as<name##Node>(const Stmt& s) {                                     \
    return s && s->kind == StmtKind::name ? static_cast<const name##Node*>(s.get()) : nullptr; \
  }
KILN_TIR_STMT_KINDS(KILN_TIR_AS)
#undef KILN_TIR_AS

// ---------------------------------------------------------------- functions

// A parameter is a buffer (passed as its data pointer) or a scalar variable.
struct PrimParam {
  Var var;        // the scalar, or the buffer's data handle
  Buffer buffer;  // null for a scalar
};

struct PrimFuncNode {
  std::string name;  // without '@'; also the exported C symbol
  std::vector<PrimParam> params;
  Stmt body;
};
using PrimFunc = std::shared_ptr<const PrimFuncNode>;

// ---------------------------------------------------------------- constructors

// Expression constructors compute the result type. They check what a caller
// can get wrong (operand types that differ, a non-bool condition) and throw
// kiln::Error; the verifier checks whole functions.
Expr int_imm(int64_t v, DataType t = DataType::int32());
Expr float_imm(double v, DataType t = DataType::float32());
Expr string_imm(std::string v);
Var make_var(std::string name, DataType t = DataType::int32());
Expr binary(BinaryOp op, Expr a, Expr b);
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr div(Expr a, Expr b);
Expr mod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr logical_not(Expr a);
Expr cast(DataType t, Expr v);  // returns v when it already has type t
Expr select(Expr c, Expr t, Expr f);
Expr load(Buffer b, std::vector<Expr> indices);
Expr call_intrinsic(Intrinsic i, std::vector<Expr> args);
Expr call_extern(DataType ret, std::string symbol, std::vector<Expr> args);
Expr ramp(Expr base, Expr stride, int lanes);
Expr broadcast(Expr v, int lanes);

Stmt for_loop(Var v, Expr min, Expr extent, ForKind k, Stmt body);
Stmt allocate(Buffer b, Stmt body);
Stmt decl_buffer(Buffer b, Stmt body);
Stmt store(Buffer b, std::vector<Expr> indices, Expr value);
Stmt let_stmt(Var v, Expr value, Stmt body);
Stmt if_then_else(Expr c, Stmt then_case, Stmt else_case = nullptr);
// Flattens nested sequences and returns the single statement of a
// one-element sequence, so a Seq is never nested and never of one.
Stmt seq(std::vector<Stmt> stmts);
Stmt evaluate(Expr v);
Stmt return_stmt(Expr code);

PrimFunc make_prim_func(std::string name, std::vector<PrimParam> params, Stmt body);
PrimParam buffer_param(Buffer b);
PrimParam scalar_param(Var v);

// Constant value of an integer immediate.
std::optional<int64_t> as_const_int(const Expr& e);
bool is_const_int(const Expr& e, int64_t v);

// ---------------------------------------------------------------- text, checks, equality

// Printer and parser: see text.h (print_prim_func, parse_prim_function).

// Checks definitions before use and unique names, types of every operand,
// index counts, memory scopes, alignments and loop variables. Throws
// kiln::Error naming the function and the offending statement.
void verify_prim_func(const PrimFuncNode& f);

// Equal up to renaming of variables and buffers (mapped where defined).
bool structural_equal(const PrimFuncNode& a, const PrimFuncNode& b);
bool structural_equal(const Stmt& a, const Stmt& b);
// Expressions: free variables and buffers equal only to themselves.
bool structural_equal(const Expr& a, const Expr& b);
// Consistent with structural_equal: equal functions hash alike.
size_t structural_hash(const PrimFuncNode& f);

}  // namespace kiln::tir
