// Tensor IR: construction, printing, parsing (exact round trip), verifier.
#include <gtest/gtest.h>

#include "tir/text.h"
#include "tir/tir.h"

namespace kiln::tir {
namespace {

// The forum's kernel after scheduling, before scratchpad lowering.
const char* kVtcmAdd =
    R"(prim @alloc_vtcm(%A: Buffer[(2048), int8], %B: Buffer[(2048), int8], %C: Buffer[(2048), int8]) {
  allocate %A_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
  allocate %B_buf: Buffer[(2048), int8, scope="local.vtcm", align=128]
  for %i0 from 0 extent 2048 {
    %A_buf[%i0] = %A[%i0]
  }
  for %i0 from 0 extent 2048 {
    %B_buf[%i0] = %B[%i0]
  }
  for %i0 from 0 extent 2048 vectorized {
    %C[%i0] = %A_buf[%i0] + %B_buf[%i0]
  }
  return 0
}
)";

PrimFunc parse_one(const std::string& text) {
  auto fs = parse_prim_functions(text, "test.kir");
  EXPECT_EQ(fs.size(), 1u);
  return fs.at(0);
}

std::string parse_error(const std::string& text) {
  try {
    parse_one(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string verify_error(const PrimFuncNode& f) {
  try {
    verify_prim_func(f);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TirTypes, DTypeTextRoundTrips) {
  for (const char* s : {"int8", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64", "bool",
                        "handle", "float32x16", "int8x128", "boolx4"}) {
    auto t = parse_dtype(s);
    ASSERT_TRUE(t) << s;
    EXPECT_EQ(dtype_str(*t), s);
  }
  EXPECT_FALSE(parse_dtype("int7"));
  EXPECT_FALSE(parse_dtype("float32x0"));
  EXPECT_FALSE(parse_dtype("vtcm"));
  EXPECT_EQ(parse_dtype("float32x8")->bytes(), 32);
  EXPECT_EQ(DataType::bool_().bytes(), 1);
  EXPECT_EQ(from_dtype(DType::UInt8), DataType::uint(8));
}

TEST(TirTypes, ScopesAreTyped) {
  EXPECT_EQ(scope_from_name("local.vtcm"), MemoryScope::LocalVTCM);
  EXPECT_EQ(scope_from_name("global.vtcm"), MemoryScope::GlobalVTCM);
  EXPECT_FALSE(scope_from_name("vtcm"));
  EXPECT_TRUE(is_scratchpad(MemoryScope::LocalVTCM));
  EXPECT_TRUE(is_scratchpad(MemoryScope::GlobalVTCM));
  EXPECT_FALSE(is_scratchpad(MemoryScope::Global));
  EXPECT_FALSE(is_scratchpad(MemoryScope::Local));
  EXPECT_EQ(scope_names(), "global, local, global.vtcm, local.vtcm");
}

TEST(TirText, ForumKernelRoundTripsExactly) {
  PrimFunc f = parse_one(kVtcmAdd);
  verify_prim_func(*f);
  EXPECT_EQ(print_prim_func(*f), kVtcmAdd);
  PrimFunc g = parse_one(print_prim_func(*f));
  EXPECT_TRUE(structural_equal(*f, *g));
  // Two allocations nested, the second's body a sequence of 4.
  auto* a = as<AllocateNode>(f->body);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->buffer->scope, MemoryScope::LocalVTCM);
  EXPECT_EQ(a->buffer->alignment, 128);
  EXPECT_EQ(a->buffer->const_bytes(), 2048);
  auto* b = as<AllocateNode>(a->body);
  ASSERT_TRUE(b);
  auto* body = as<SeqNode>(b->body);
  ASSERT_TRUE(body);
  EXPECT_EQ(body->stmts.size(), 4u);
  EXPECT_EQ(as<ForNode>(body->stmts[2])->for_kind, ForKind::Vectorized);
}

TEST(TirText, EveryNodeKindRoundTrips) {
  const std::string text =
      R"(prim @all(%X: Buffer[(4, 8), float32, align=128, strides=(8, 1)], %n: int32, %p: handle) {
  let %h = call_extern<handle>("HexagonBackendAllocateVTCM", uint32(128), uint32(128)) {
    if isnull(%h) {
      evaluate call_extern<int32>("KilnBackendSetLastError", "no \"memory\"\n")
      return -1
    } else {
      evaluate call_extern<int32>("HexagonBackendFreeVTCM", %h)
    }
  }
  decl_buffer %V: Buffer[(16), float32, scope="global.vtcm", data=%p] {
    %V[ramp(0, 1, 8)] = broadcast(-2.5, 8)
  }
  for %i from 0 extent 4 parallel {
    for %j from 0 extent 8 unrolled {
      %X[%i, %j] = select(and(%i < %j, not(%i == 2)), cast<float32>(%i * %j + mod(%n, 3)), max(sqrt(%X[%i, %j]), -inf))
    }
  }
  let %k = cast<int64>((%n - 1) * (%n + 2) / 4) - int64(7)
  if or(ne(%n, 0), %n >= 5) {
    return min(shr(%n, 1), shl(%n, 2))
  }
  return 0
}
)";
  PrimFunc f = parse_one(text);
  verify_prim_func(*f);
  std::string printed = print_prim_func(*f);
  EXPECT_EQ(printed, text);
  PrimFunc g = parse_one(printed);
  EXPECT_TRUE(structural_equal(*f, *g));
  EXPECT_EQ(print_prim_func(*g), printed);
  // The string argument was unescaped by the lexer and escaped again by the printer.
  auto* let = as<LetStmtNode>(as<SeqNode>(f->body)->stmts[0]);
  auto* call =
      as<CallNode>(as<EvaluateNode>(as<SeqNode>(as<IfThenElseNode>(let->body)->then_case)->stmts[0])->value);
  EXPECT_EQ(as<StringImmNode>(call->args[0])->value, "no \"memory\"\n");
}

TEST(TirText, PrecedenceAndParenthesesAreKept) {
  PrimFunc f = parse_one(R"(prim @p(%a: int32, %b: int32, %O: Buffer[(1), int32]) {
  %O[0] = %a - (%b - 1) * 2 + %a / (%b * 3)
  %O[0] = %a-1
}
)");
  auto* s = as<SeqNode>(f->body);
  ASSERT_TRUE(s);
  auto* st = as<BufferStoreNode>(s->stmts[0]);
  // ((a - ((b - 1) * 2)) + (a / (b * 3)))
  auto* top = as<BinaryNode>(st->value);
  ASSERT_TRUE(top);
  EXPECT_EQ(top->op, BinaryOp::Add);
  EXPECT_EQ(as<BinaryNode>(top->a)->op, BinaryOp::Sub);
  EXPECT_EQ(as<BinaryNode>(top->b)->op, BinaryOp::Div);
  EXPECT_EQ(print_expr(st->value), "%a - (%b - 1) * 2 + %a / (%b * 3)");
  // "%a-1" is a subtraction even though the lexer reads "-1" as a number.
  auto* sub = as<BinaryNode>(as<BufferStoreNode>(s->stmts[1])->value);
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->op, BinaryOp::Sub);
  EXPECT_EQ(as_const_int(sub->b), 1);
}

TEST(TirText, ScopedStatementBracesOnlyWhenNotLast) {
  auto A = make_buffer("A", DataType::int32(), {int_imm(4)});
  Var x = make_var("x");
  Stmt inner = store(A, {int_imm(0)}, x);
  // let in the middle of a block: braced; let at the end: flat.
  Stmt body = seq({let_stmt(x, int_imm(1), inner), let_stmt(make_var("y"), int_imm(2), seq({}))});
  PrimFunc f = make_prim_func("s", {buffer_param(A)}, body);
  verify_prim_func(*f);
  std::string text = print_prim_func(*f);
  EXPECT_EQ(text, R"(prim @s(%A: Buffer[(4), int32]) {
  let %x = 1 {
    %A[0] = %x
  }
  let %y = 2
}
)");
  EXPECT_TRUE(structural_equal(*f, *parse_one(text)));
}

TEST(TirText, ParseErrorsPointAtTheToken) {
  EXPECT_EQ(parse_error("prim @f(%A: Buffer[(4), int8, scope=\"vtcm\"]) {\n}\n"),
            "test.kir:1:37: unknown memory scope \"vtcm\" (known: global, local, global.vtcm, "
            "local.vtcm)\nprim @f(%A: Buffer[(4), int8, scope=\"vtcm\"]) {\n                   "
            "                 ^");
  EXPECT_NE(parse_error("prim @f(%A: Buffer[(4), int8]) {\n  %A[0] = %B[0]\n}\n")
                .find("test.kir:2:11: undefined variable %B"),
            std::string::npos);
  EXPECT_NE(parse_error("prim @f(%A: Buffer[(4), int8]) {\n  %A[0] = 1\n}\n")
                .find("test.kir:2:3: storing int32 into %A which holds int8"),
            std::string::npos);
  EXPECT_NE(parse_error("prim @f(%A: Buffer[(4), int8]) {\n  for %A from 0 extent 4 {\n  }\n}\n")
                .find("%A is already defined here"),
            std::string::npos);
  EXPECT_NE(parse_error("prim @f(%a: int32) {\n  return %a + 1.5\n}\n")
                .find("test.kir:2:13: operands of '+' differ in type: int32 and float32"),
            std::string::npos);
  EXPECT_NE(parse_error("prim @f(%a: int32) {\n  return 3000000000\n}\n")
                .find("does not fit int32; write int64(3000000000)"),
            std::string::npos);
  std::string eof = parse_error("prim @f(%a: int32) {\n  return %a\n");
  EXPECT_NE(eof.find("test.kir:3:1:"), std::string::npos) << eof;
  EXPECT_NE(eof.find("end of file"), std::string::npos) << eof;
  EXPECT_NE(eof.find("expected '}'"), std::string::npos) << eof;
  EXPECT_NE(parse_error("prim @f(%a: int32) {\n  evaluate frob(%a)\n}\n").find("unknown function 'frob'"),
            std::string::npos);
  EXPECT_NE(parse_error("prim @f(%A: Buffer[(4), int32]) {\n  %A[0] = sigmoid(%A[1])\n}\n")
                .find("test.kir:2:11: sigmoid takes a float, not int32"),
            std::string::npos);
  EXPECT_NE(parse_error("prim @f(%A: Buffer[(4), int8, align=3]) {\n}\n")
                .find("alignment must be a power of two, not 3"),
            std::string::npos);
}

TEST(TirVerify, RejectsUnknownScopeAndBadStructure) {
  auto A = make_buffer("A", DataType::int_(8), {int_imm(4)}, static_cast<MemoryScope>(9));
  PrimFunc f = make_prim_func("bad", {buffer_param(A)}, return_stmt(int_imm(0)));
  EXPECT_NE(verify_error(*f).find("parameter %A has an unknown memory scope (known: global, "
                                  "local, global.vtcm, local.vtcm)"),
            std::string::npos);

  auto B = make_buffer("B", DataType::int_(8), {int_imm(4)});
  Var i = make_var("i");
  // %i used outside its loop.
  Stmt body =
      seq({for_loop(i, int_imm(0), int_imm(4), ForKind::Serial, store(B, {i}, int_imm(1, DataType::int_(8)))),
           store(B, {i}, int_imm(2, DataType::int_(8)))});
  std::string err = verify_error(*make_prim_func("g", {buffer_param(B)}, body));
  EXPECT_NE(err.find("invalid prim function @g: %i is used outside its definition\n  in: %B[%i] = int8(2)"),
            std::string::npos)
      << err;

  // A buffer used outside its allocation.
  auto T = make_buffer("T", DataType::int_(8), {int_imm(4)}, MemoryScope::LocalVTCM);
  Stmt leak = seq({allocate(T, store(T, {int_imm(0)}, int_imm(1, DataType::int_(8)))),
                   store(B, {int_imm(0)}, load(T, {int_imm(0)}))});
  EXPECT_NE(verify_error(*make_prim_func("h", {buffer_param(B)}, leak))
                .find("buffer %T is used outside its definition"),
            std::string::npos);

  // Shifts take integers.
  PrimFunc shift = make_prim_func(
      "s", {}, return_stmt(cast(DataType::int32(), binary(BinaryOp::Shl, float_imm(1.0), float_imm(2.0)))));
  EXPECT_NE(verify_error(*shift).find("shl shifts integers, not float32"), std::string::npos)
      << verify_error(*shift);

  // Return codes are int32.
  EXPECT_NE(verify_error(*make_prim_func("r", {}, return_stmt(int_imm(0, DataType::int64()))))
                .find("return takes an int32 code, not int64"),
            std::string::npos);
}

TEST(TirConstruct, ConstructorsCheckTypes) {
  auto A = make_buffer("A", DataType::float32(), {int_imm(2), int_imm(3)});
  try {
    add(int_imm(1), float_imm(1.0));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "operands of '+' differ in type: int32 and float32; insert a cast");
  }
  EXPECT_THROW(load(A, {int_imm(0)}), Error);
  EXPECT_EQ(load(A, {int_imm(0), ramp(int_imm(0), int_imm(1), 4)})->dtype, DataType::float_(32, 4));
  EXPECT_EQ(lt(int_imm(1), int_imm(2))->dtype, DataType::bool_());
  EXPECT_EQ(A->const_bytes(), 24);
  // seq() flattens and unwraps.
  Stmt r = return_stmt(int_imm(0));
  EXPECT_EQ(seq({seq({r})}), r);
  EXPECT_EQ(as<SeqNode>(seq({seq({r, r}), r}))->stmts.size(), 3u);
}

}  // namespace
}  // namespace kiln::tir
