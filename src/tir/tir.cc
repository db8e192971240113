#include "tir/tir.h"

#include <charconv>

namespace kiln::tir {

// ---------------------------------------------------------------- types

std::string dtype_str(DataType t) {
  std::string s;
  switch (t.code) {
    case DataType::Code::Int:
      s = "int" + std::to_string(t.bits);
      break;
    case DataType::Code::UInt:
      s = "uint" + std::to_string(t.bits);
      break;
    case DataType::Code::Float:
      s = "float" + std::to_string(t.bits);
      break;
    case DataType::Code::Bool:
      s = "bool";
      break;
    case DataType::Code::Handle:
      return "handle";
  }
  if (t.lanes > 1) s += "x" + std::to_string(t.lanes);
  return s;
}

static std::optional<int> parse_uint(std::string_view s) {
  int v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

std::optional<DataType> parse_dtype(std::string_view s) {
  if (s == "handle") return DataType::handle();
  int lanes = 1;
  if (auto x = s.find('x'); x != std::string_view::npos) {
    auto l = parse_uint(s.substr(x + 1));
    if (!l || *l > 1024) return std::nullopt;
    lanes = *l;
    s = s.substr(0, x);
  }
  if (s == "bool") return DataType::bool_(lanes);
  auto with_bits = [&](std::string_view prefix, DataType::Code code,
                       std::initializer_list<int> allowed) -> std::optional<DataType> {
    if (s.substr(0, prefix.size()) != prefix) return std::nullopt;
    auto bits = parse_uint(s.substr(prefix.size()));
    if (!bits) return std::nullopt;
    for (int b : allowed)
      if (b == *bits) return DataType{code, uint8_t(b), uint16_t(lanes)};
    return std::nullopt;
  };
  if (auto t = with_bits("uint", DataType::Code::UInt, {8, 16, 32, 64})) return t;
  if (auto t = with_bits("int", DataType::Code::Int, {8, 16, 32, 64})) return t;
  if (auto t = with_bits("float", DataType::Code::Float, {16, 32, 64})) return t;
  return std::nullopt;
}

DataType from_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return DataType::float_(32);
    case DType::Float16:
      return DataType::float_(16);
    case DType::Int8:
      return DataType::int_(8);
    case DType::UInt8:
      return DataType::uint(8);
    case DType::Int32:
      return DataType::int_(32);
    case DType::Int64:
      return DataType::int_(64);
    case DType::Bool:
      return DataType::bool_();
    case DType::Float64:
      return DataType::float_(64);
    case DType::Int16:
      return DataType::int_(16);
    case DType::UInt16:
      return DataType::uint(16);
    case DType::UInt32:
      return DataType::uint(32);
    case DType::UInt64:
      return DataType::uint(64);
    case DType::BFloat16:
      throw Error("bfloat16 has no tensor IR type (use float32, or leave the op to its reference kernel)");
  }
  KILN_ASSERT(false, "unknown DType");
}

// ---------------------------------------------------------------- scopes

const char* scope_name(MemoryScope s) {
  switch (s) {
#define KILN_TIR_CASE(name, text, scratch) \
  case MemoryScope::name:                  \
    return text;
    KILN_TIR_MEMORY_SCOPES(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
  return "<invalid scope>";
}

std::optional<MemoryScope> scope_from_name(std::string_view s) {
#define KILN_TIR_CASE(name, text, scratch) \
  if (s == text) return MemoryScope::name;
  KILN_TIR_MEMORY_SCOPES(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  return std::nullopt;
}

bool is_scratchpad(MemoryScope s) {
  switch (s) {
#define KILN_TIR_CASE(name, text, scratch) \
  case MemoryScope::name:                  \
    return scratch;
    KILN_TIR_MEMORY_SCOPES(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
  return false;
}

bool is_valid_scope(MemoryScope s) { return static_cast<int>(s) < kNumMemoryScopes; }

std::string scope_names() {
  std::string s;
#define KILN_TIR_CASE(name, text, scratch) s += std::string(s.empty() ? "" : ", ") + text;
  KILN_TIR_MEMORY_SCOPES(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  return s;
}

// ---------------------------------------------------------------- names of enums

const char* binary_op_text(BinaryOp op) {
  switch (op) {
#define KILN_TIR_CASE(name, text, infix) \
  case BinaryOp::name:                   \
    return text;
    KILN_TIR_BINARY_OPS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
  return "?";
}

bool is_infix(BinaryOp op) {
  switch (op) {
#define KILN_TIR_CASE(name, text, infix) \
  case BinaryOp::name:                   \
    return infix;
    KILN_TIR_BINARY_OPS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
  return false;
}

bool is_comparison(BinaryOp op) { return op >= BinaryOp::EQ && op <= BinaryOp::GE; }
bool is_logical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }
bool is_shift(BinaryOp op) { return op == BinaryOp::Shl || op == BinaryOp::Shr; }

const char* intrinsic_name(Intrinsic i) {
  switch (i) {
#define KILN_TIR_CASE(name, text) \
  case Intrinsic::name:           \
    return text;
    KILN_TIR_INTRINSICS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  }
  return "?";
}

std::optional<Intrinsic> intrinsic_from_name(std::string_view s) {
#define KILN_TIR_CASE(name, text) \
  if (s == text) return Intrinsic::name;
  KILN_TIR_INTRINSICS(KILN_TIR_CASE)
#undef KILN_TIR_CASE
  return std::nullopt;
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial:
      return "serial";
    case ForKind::Parallel:
      return "parallel";
    case ForKind::Vectorized:
      return "vectorized";
    case ForKind::Unrolled:
      return "unrolled";
  }
  return "?";
}

// ---------------------------------------------------------------- buffers

std::optional<int64_t> BufferNode::const_numel() const {
  int64_t n = 1;
  for (const Expr& e : shape) {
    auto v = as_const_int(e);
    if (!v) return std::nullopt;
    n *= *v;
  }
  return n;
}

std::optional<int64_t> BufferNode::const_bytes() const {
  auto n = const_numel();
  if (!n) return std::nullopt;
  return *n * dtype.bytes();
}

std::string data_var_name(const std::string& buffer_name) { return buffer_name + "_data"; }

Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape, MemoryScope scope,
                   int64_t alignment, std::vector<Expr> strides, Var data) {
  auto b = std::make_shared<BufferNode>();
  if (!data) data = make_var(data_var_name(name), DataType::handle());
  b->name = std::move(name);
  b->data = std::move(data);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->strides = std::move(strides);
  b->alignment = alignment;
  b->scope = scope;
  return b;
}

// ---------------------------------------------------------------- expressions

Expr int_imm(int64_t v, DataType t) { return std::make_shared<IntImmNode>(t, v); }
Expr float_imm(double v, DataType t) { return std::make_shared<FloatImmNode>(t, v); }
Expr string_imm(std::string v) { return std::make_shared<StringImmNode>(std::move(v)); }
Var make_var(std::string name, DataType t) { return std::make_shared<VarNode>(std::move(name), t); }

Expr binary(BinaryOp op, Expr a, Expr b) {
  KILN_CHECK(a && b, "binary '", binary_op_text(op), "' is missing an operand");
  KILN_CHECK(a->dtype == b->dtype, "operands of '", binary_op_text(op),
             "' differ in type: ", dtype_str(a->dtype), " and ", dtype_str(b->dtype), "; insert a cast");
  DataType t = a->dtype;
  if (is_logical(op))
    KILN_CHECK(t.is_bool(), "operands of '", binary_op_text(op), "' must be bool, not ", dtype_str(t));
  if (is_comparison(op)) t = DataType::bool_(t.lanes);
  return std::make_shared<BinaryNode>(t, op, std::move(a), std::move(b));
}
Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr sub(Expr a, Expr b) { return binary(BinaryOp::Sub, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr div(Expr a, Expr b) { return binary(BinaryOp::Div, std::move(a), std::move(b)); }
Expr mod(Expr a, Expr b) { return binary(BinaryOp::Mod, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return binary(BinaryOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(BinaryOp::Max, std::move(a), std::move(b)); }
Expr lt(Expr a, Expr b) { return binary(BinaryOp::LT, std::move(a), std::move(b)); }
Expr eq(Expr a, Expr b) { return binary(BinaryOp::EQ, std::move(a), std::move(b)); }

Expr logical_not(Expr a) {
  KILN_CHECK(a->dtype.is_bool(), "operand of 'not' must be bool, not ", dtype_str(a->dtype));
  return std::make_shared<NotNode>(std::move(a));
}

Expr cast(DataType t, Expr v) {
  if (v->dtype == t) return v;
  KILN_CHECK(v->dtype.lanes == t.lanes, "cast from ", dtype_str(v->dtype), " to ", dtype_str(t),
             " changes the lane count");
  KILN_CHECK(v->dtype.is_handle() == t.is_handle(), "cannot cast ", dtype_str(v->dtype), " to ",
             dtype_str(t));
  return std::make_shared<CastNode>(t, std::move(v));
}

Expr select(Expr c, Expr t, Expr f) {
  KILN_CHECK(c->dtype.is_bool(), "select condition must be bool, not ", dtype_str(c->dtype));
  KILN_CHECK(t->dtype == f->dtype, "select branches differ in type: ", dtype_str(t->dtype), " and ",
             dtype_str(f->dtype));
  return std::make_shared<SelectNode>(std::move(c), std::move(t), std::move(f));
}

Expr load(Buffer b, std::vector<Expr> indices) {
  KILN_CHECK(indices.size() == b->shape.size(), "buffer %", b->name, " has ", b->shape.size(),
             " dimensions but is indexed with ", indices.size());
  int lanes = 1;
  for (const Expr& i : indices) {
    KILN_CHECK(i->dtype.is_integer(), "index of buffer %", b->name, " must be an integer, not ",
               dtype_str(i->dtype));
    lanes = std::max<int>(lanes, i->dtype.lanes);
  }
  DataType t = b->dtype.with_lanes(lanes * b->dtype.lanes);
  return std::make_shared<BufferLoadNode>(t, std::move(b), std::move(indices));
}

Expr call_intrinsic(Intrinsic i, std::vector<Expr> args) {
  auto want = [&](size_t n) {
    KILN_CHECK(args.size() == n, "intrinsic ", intrinsic_name(i), " takes ", n, " argument(s), not ",
               args.size());
  };
  DataType t;
  switch (i) {
    case Intrinsic::IsNull:
      want(1);
      KILN_CHECK(args[0]->dtype.is_handle(), "isnull takes a handle, not ", dtype_str(args[0]->dtype));
      t = DataType::bool_();
      break;
    case Intrinsic::Abs:
      want(1);
      KILN_CHECK(args[0]->dtype.is_integer() || args[0]->dtype.is_float(), "abs takes a number, not ",
                 dtype_str(args[0]->dtype));
      t = args[0]->dtype;
      break;
    case Intrinsic::Sqrt:
    case Intrinsic::Exp:
    case Intrinsic::Log:
    case Intrinsic::Tanh:
    case Intrinsic::Sigmoid:
    case Intrinsic::Erf:
    case Intrinsic::Sin:
    case Intrinsic::Cos:
    case Intrinsic::Tan:
    case Intrinsic::Asin:
    case Intrinsic::Acos:
    case Intrinsic::Atan:
    case Intrinsic::Sinh:
    case Intrinsic::Cosh:
    case Intrinsic::Asinh:
    case Intrinsic::Acosh:
    case Intrinsic::Atanh:
    case Intrinsic::Floor:
    case Intrinsic::Ceil:
    case Intrinsic::Round:
      want(1);
      KILN_CHECK(args[0]->dtype.is_float(), intrinsic_name(i), " takes a float, not ",
                 dtype_str(args[0]->dtype));
      t = args[0]->dtype;
      break;
    case Intrinsic::Pow:
    case Intrinsic::Fmod:
      want(2);
      KILN_CHECK(args[0]->dtype.is_float() && args[0]->dtype == args[1]->dtype, intrinsic_name(i),
                 " takes two floats of one type, not ", dtype_str(args[0]->dtype), " and ",
                 dtype_str(args[1]->dtype));
      t = args[0]->dtype;
      break;
    case Intrinsic::Likely:
      want(1);
      KILN_CHECK(args[0]->dtype.is_bool(), "likely takes a bool, not ", dtype_str(args[0]->dtype));
      t = args[0]->dtype;
      break;
    case Intrinsic::AddressOffset:
      want(2);
      KILN_CHECK(args[0]->dtype.is_handle() && args[1]->dtype == DataType::int64(),
                 "address_offset takes a handle and an int64 byte offset, not ", dtype_str(args[0]->dtype),
                 " and ", dtype_str(args[1]->dtype));
      t = DataType::handle();
      break;
    case Intrinsic::ParallelStatus:
      want(0);
      t = DataType::int32();
      break;
    case Intrinsic::DotI8x4:
    case Intrinsic::DotI16x2: {
      // Hexagon: one HVX vrmpy (32 lanes); x86: one vpdpbusd, or one
      // vpmaddwd and an add; elsewhere widened products summed by groups.
      want(3);
      const bool bytes = i == Intrinsic::DotI8x4;
      const int group = bytes ? 4 : 2, bits = bytes ? 8 : 16;
      const DataType& acc = args[0]->dtype;
      KILN_CHECK(acc.code == DataType::Code::Int && acc.bits == 32, intrinsic_name(i),
                 " accumulates into int32 lanes, not ", dtype_str(acc));
      // Bytes: the first operand int8 or uint8 (x86's vpdpbusd: unsigned by signed).
      for (size_t k = 1; k < 3; ++k)
        KILN_CHECK((args[k]->dtype.code == DataType::Code::Int ||
                    (bytes && k == 1 && args[k]->dtype.code == DataType::Code::UInt)) &&
                       args[k]->dtype.bits == bits && args[k]->dtype.lanes == group * acc.lanes,
                   intrinsic_name(i), " takes ", bytes ? (k == 1 ? "int8 or uint8" : "int8") : "int16",
                   " operands of ", bytes ? "four" : "two", " lanes per accumulator lane (",
                   group * acc.lanes, " for ", dtype_str(acc), "), not ", dtype_str(args[k]->dtype));
      t = acc;
      break;
    }
  }
  return std::make_shared<CallNode>(t, CallKind::Intrinsic, intrinsic_name(i), std::move(args));
}

Expr call_extern(DataType ret, std::string symbol, std::vector<Expr> args) {
  KILN_CHECK(!symbol.empty(), "an extern call needs a symbol name");
  return std::make_shared<CallNode>(ret, CallKind::Extern, std::move(symbol), std::move(args));
}

Expr ramp(Expr base, Expr stride, int lanes) {
  KILN_CHECK(lanes > 1, "a ramp needs at least 2 lanes, not ", lanes);
  KILN_CHECK(base->dtype == stride->dtype && base->dtype.is_integer() && !base->dtype.is_vector(),
             "ramp base and stride must be scalar integers of one type");
  return std::make_shared<RampNode>(std::move(base), std::move(stride), lanes);
}

Expr broadcast(Expr v, int lanes) {
  KILN_CHECK(lanes > 1, "a broadcast needs at least 2 lanes, not ", lanes);
  KILN_CHECK(!v->dtype.is_vector(), "broadcast of a vector");
  return std::make_shared<BroadcastNode>(std::move(v), lanes);
}

// ---------------------------------------------------------------- statements

Stmt for_loop(Var v, Expr min, Expr extent, ForKind k, Stmt body) {
  return std::make_shared<ForNode>(std::move(v), std::move(min), std::move(extent), k, std::move(body));
}
Stmt allocate(Buffer b, Stmt body) { return std::make_shared<AllocateNode>(std::move(b), std::move(body)); }
Stmt decl_buffer(Buffer b, Stmt body) {
  return std::make_shared<DeclBufferNode>(std::move(b), std::move(body));
}
Stmt store(Buffer b, std::vector<Expr> indices, Expr value) {
  return std::make_shared<BufferStoreNode>(std::move(b), std::move(indices), std::move(value));
}
Stmt let_stmt(Var v, Expr value, Stmt body) {
  return std::make_shared<LetStmtNode>(std::move(v), std::move(value), std::move(body));
}
Stmt if_then_else(Expr c, Stmt then_case, Stmt else_case) {
  return std::make_shared<IfThenElseNode>(std::move(c), std::move(then_case), std::move(else_case));
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s) continue;
    if (auto* q = as<SeqNode>(s)) {
      flat.insert(flat.end(), q->stmts.begin(), q->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return std::make_shared<SeqNode>(std::move(flat));
}

Stmt evaluate(Expr v) { return std::make_shared<EvaluateNode>(std::move(v)); }
Stmt return_stmt(Expr code) { return std::make_shared<ReturnNode>(std::move(code)); }

PrimFunc make_prim_func(std::string name, std::vector<PrimParam> params, Stmt body) {
  auto f = std::make_shared<PrimFuncNode>();
  f->name = std::move(name);
  f->params = std::move(params);
  f->body = std::move(body);
  return f;
}

PrimParam buffer_param(Buffer b) { return PrimParam{b->data, b}; }
PrimParam scalar_param(Var v) { return PrimParam{std::move(v), nullptr}; }

std::optional<int64_t> as_const_int(const Expr& e) {
  if (auto* i = as<IntImmNode>(e)) return i->value;
  return std::nullopt;
}

bool is_const_int(const Expr& e, int64_t v) {
  auto c = as_const_int(e);
  return c && *c == v;
}

}  // namespace kiln::tir
