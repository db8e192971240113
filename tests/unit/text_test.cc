// The .kir text format: lexer, printer, parser, round trips, load/save.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "ir/lexer.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"

namespace kiln {
namespace {

// ---------------------------------------------------------------- helpers

Type f32(Shape s) { return tensor_type(std::move(s), DType::Float32); }

// print -> parse -> print: the module comes back structurally equal and
// prints to the same text.
Module round_trip(const Module& m, const ConstantStore* side = nullptr) {
  std::string text = print_module(m);
  Module back = parse_module(text, "rt.kir", side);
  EXPECT_TRUE(structural_equal(m, back)) << text;
  EXPECT_EQ(print_module(back), text);
  return back;
}

Module one_function(Function f) {
  Module m;
  m.functions.push_back(std::move(f));
  return m;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---------------------------------------------------------------- lexer

TEST(Lexer, TokensWithLocations) {
  Lexer lex("def @main(%x: Tensor[(2,), float32]) # note\n  -> nn.relu 1.5 -3 \"a\\\"b\\n\" ?n", "t.kir");
  struct Want {
    TokenKind kind;
    std::string text;
    int line, column;
  };
  std::vector<Want> want = {
      {TokenKind::Ident, "def", 1, 1},      {TokenKind::Global, "main", 1, 5},
      {TokenKind::LParen, "(", 1, 10},      {TokenKind::Local, "x", 1, 11},
      {TokenKind::Colon, ":", 1, 13},       {TokenKind::Ident, "Tensor", 1, 15},
      {TokenKind::LBracket, "[", 1, 21},    {TokenKind::LParen, "(", 1, 22},
      {TokenKind::Int, "2", 1, 23},         {TokenKind::Comma, ",", 1, 24},
      {TokenKind::RParen, ")", 1, 25},      {TokenKind::Comma, ",", 1, 26},
      {TokenKind::Ident, "float32", 1, 28}, {TokenKind::RBracket, "]", 1, 35},
      {TokenKind::RParen, ")", 1, 36},      {TokenKind::Arrow, "->", 2, 3},
      {TokenKind::Ident, "nn", 2, 6},       {TokenKind::Dot, ".", 2, 8},
      {TokenKind::Ident, "relu", 2, 9},     {TokenKind::Float, "1.5", 2, 14},
      {TokenKind::Int, "-3", 2, 18},        {TokenKind::String, "a\"b\n", 2, 21},
      {TokenKind::Question, "?", 2, 30},    {TokenKind::Ident, "n", 2, 31},
      {TokenKind::End, "", 2, 32},
  };
  for (const auto& w : want) {
    Token t = lex.next();
    EXPECT_EQ(t.kind, w.kind) << w.text;
    EXPECT_EQ(t.text, w.text);
    EXPECT_EQ(t.line, w.line) << w.text;
    EXPECT_EQ(t.column, w.column) << w.text;
  }
}

TEST(Lexer, NumbersAndAdjacency) {
  Lexer lex("12 -7 2.5e3 1e-2 9223372036854775807 -9223372036854775808 nn.conv2d nn . x", "t");
  EXPECT_EQ(lex.next().int_value, 12);
  EXPECT_EQ(lex.next().int_value, -7);
  EXPECT_DOUBLE_EQ(lex.next().float_value, 2500.0);
  EXPECT_DOUBLE_EQ(lex.next().float_value, 0.01);
  EXPECT_EQ(lex.next().int_value, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(lex.next().int_value, std::numeric_limits<int64_t>::min());
  Token a = lex.next(), dot = lex.next(), b = lex.next();
  EXPECT_TRUE(Lexer::adjacent(a, dot));
  EXPECT_TRUE(Lexer::adjacent(dot, b));
  Token c = lex.next(), dot2 = lex.next();
  EXPECT_FALSE(Lexer::adjacent(c, dot2));
}

TEST(Lexer, CopyRemembersPosition) {
  Lexer lex("a b c", "t");
  lex.next();
  Lexer saved = lex;
  EXPECT_EQ(lex.next().text, "b");
  EXPECT_EQ(lex.next().text, "c");
  EXPECT_EQ(saved.next().text, "b");
}

TEST(Lexer, QuotedNamesAndComments) {
  Lexer lex("/* block\n comment */ %\"input.1\" @\"a b\" @npu.f_0 # tail", "t");
  Token v = lex.next();
  EXPECT_EQ(v.kind, TokenKind::Local);
  EXPECT_EQ(v.text, "input.1");
  EXPECT_EQ(v.line, 2);
  EXPECT_EQ(v.column, 13);
  EXPECT_EQ(lex.next().text, "a b");
  EXPECT_EQ(lex.next().text, "npu.f_0");
  EXPECT_TRUE(lex.at(TokenKind::End));
}

TEST(Lexer, ErrorContextHasLineAndCaret) {
  Lexer lex("x\n  y $ z\n", "f.kir");
  lex.next();
  lex.next();
  try {
    lex.next();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_EQ(e.loc().column, 5);
    EXPECT_EQ(e.message(), "unexpected character '$'");
    EXPECT_EQ(e.context(), "  y $ z\n    ^");
    EXPECT_EQ(std::string(e.what()), "f.kir:2:5: unexpected character '$'\n  y $ z\n    ^");
  }
}

// ---------------------------------------------------------------- printer, known text

TEST(Printer, MatmulReluExactText) {
  Var x = make_var("x", f32({2, 4}));
  Var w = make_var("w", f32({4, 8}));
  Var y = make_var("y", f32({2, 8}));
  Var z = make_var("z", f32({2, 8}));
  Expr mm = make_op_call("matmul", {x, w});
  Expr relu = make_op_call("nn.relu", {y});
  Module m = one_function(make_function("main", {x, w}, {{y, mm}, {z, relu}}, z));
  EXPECT_EQ(print_module(m),
            "def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 8), float32]) -> "
            "Tensor[(2, 8), float32] {\n"
            "  %y = matmul(%x, %w, out_dtype=\"\")\n"
            "  %z = nn.relu(%y)\n"
            "  return %z\n"
            "}\n");
  round_trip(m);
}

TEST(Parser, ReadsTheDocumentedExample) {
  const char* text =
      "# a comment\n"
      "def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 8), float32]) -> Tensor[(2, 8), float32] {\n"
      "  %y = matmul(%x, %w)\n"
      "  %z = nn.relu(%y)\n"
      "  return %z\n"
      "}\n";
  Module m = parse_module(text, "ex.kir");
  ASSERT_EQ(m.functions.size(), 1u);
  const FunctionNode& f = *m.functions[0];
  EXPECT_EQ(f.name, "main");
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(f.params[1]->name, "w");
  EXPECT_EQ(f.params[1]->type->tensor.shape, (Shape{4, 8}));
  ASSERT_EQ(f.bindings.size(), 2u);
  auto* mm = as<CallNode>(f.bindings[0].value);
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->op->name, "matmul");
  EXPECT_EQ(mm->args[0], f.params[0]);
  EXPECT_EQ(mm->args[1], f.params[1]);
  // Defaults are filled in.
  EXPECT_EQ(mm->attrs.get_string("out_dtype"), "");
  auto* relu = as<CallNode>(f.bindings[1].value);
  EXPECT_EQ(relu->op->name, "nn.relu");
  EXPECT_EQ(relu->args[0], f.bindings[0].var);
  EXPECT_EQ(f.result, f.bindings[1].var);
  EXPECT_EQ(f.ret_type->tensor.shape, (Shape{2, 8}));
}

TEST(Parser, Conv2dKeywordAttributes) {
  const char* text =
      "def @f(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) -> "
      "Tensor[(1, 4, 8, 8), float32] {\n"
      "  %y = nn.conv2d(%x, %w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)\n"
      "  return %y\n"
      "}\n";
  Module m = parse_module(text, "c.kir");
  auto* c = as<CallNode>(m.functions[0]->bindings[0].value);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->attrs.get_ints("padding"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(c->attrs.get_int("groups"), 1);
  // Printed: every normalised attribute, sorted by name.
  EXPECT_EQ(print_expr(m.functions[0]->bindings[0].value),
            "nn.conv2d(%x, %w, dilation=[1, 1], groups=1, out_dtype=\"\", padding=[1, 1, 1, 1], "
            "strides=[1, 1])");
  round_trip(m);
}

TEST(Parser, FloatAndStringAttributes) {
  const char* text =
      "def @f(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] {\n"
      "  %a = nn.leaky_relu(%x, alpha=0.1)\n"
      "  %b = clip(%a, a_min=-1, a_max=2.5e0)\n"
      "  %c = nn.gelu(%b, approximate=\"tanh\")\n"
      "  return %c\n"
      "}\n";
  Module m = parse_module(text, "a.kir");
  const auto& b = m.functions[0]->bindings;
  EXPECT_DOUBLE_EQ(as<CallNode>(b[0].value)->attrs.get_float("alpha"), 0.1);
  EXPECT_DOUBLE_EQ(as<CallNode>(b[1].value)->attrs.get_float("a_min"), -1.0);
  EXPECT_DOUBLE_EQ(as<CallNode>(b[1].value)->attrs.get_float("a_max"), 2.5);
  EXPECT_EQ(as<CallNode>(b[2].value)->attrs.get_string("approximate"), "tanh");
  std::string printed = print_module(m);
  EXPECT_NE(printed.find("nn.leaky_relu(%x, alpha=0.1)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("clip(%a, a_max=2.5, a_min=-1.0)"), std::string::npos) << printed;
  round_trip(m);
}

// ---------------------------------------------------------------- each syntax element

TEST(Parser, TuplesFieldsAndTupleReturn) {
  const char* text =
      "def @f(%x: Tensor[(4, 2), float32]) -> (Tensor[(2, 2), float32], (Tensor[(4, 2), float32],)) {\n"
      "  %s = split(%x, sections=2)\n"
      "  %a = %s.0\n"
      "  %b = %s.1\n"
      "  %one = (%x,)\n"
      "  %t = (%a, %b)\n"
      "  %c = add(%t.0, %t.1)\n"
      "  return (%c, %one)\n"
      "}\n";
  Module m = parse_module(text, "t.kir");
  const FunctionNode& f = *m.functions[0];
  auto* get = as<TupleGetItemNode>(f.bindings[2].value);
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(get->index, 1);
  auto* one = as<TupleNode>(f.bindings[3].value);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->fields.size(), 1u);
  auto* add = as<CallNode>(f.bindings[5].value);
  ASSERT_NE(as<TupleGetItemNode>(add->args[1]), nullptr);
  EXPECT_EQ(as<TupleGetItemNode>(add->args[1])->index, 1);
  auto* ret = as<TupleNode>(f.result);
  ASSERT_NE(ret, nullptr);
  EXPECT_EQ(ret->fields.size(), 2u);
  EXPECT_EQ(type_str(f.ret_type), "(Tensor[(2, 2), float32], (Tensor[(4, 2), float32],))");
  round_trip(m);
}

TEST(Parser, NestedFieldAccessAndParenthesis) {
  const char* text =
      "def @f(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
      "  %t = ((%x, %x), %x)\n"
      "  %a = %t.0.1\n"
      "  %b = (%a)\n"
      "  return %b\n"
      "}\n";
  Module m = parse_module(text, "n.kir");
  const FunctionNode& f = *m.functions[0];
  auto* outer = as<TupleGetItemNode>(f.bindings[1].value);
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->index, 1);
  EXPECT_EQ(as<TupleGetItemNode>(outer->tuple)->index, 0);
  EXPECT_EQ(f.bindings[2].value, f.bindings[1].var);
  round_trip(m);
}

TEST(Parser, FunctionCallsBeforeDefinitionAndAttrs) {
  const char* text =
      "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
      "  %y = @helper(%x)\n"
      "  return %y\n"
      "}\n"
      "\n"
      "def @helper(%a: Tensor[(2,), float32]) -> Tensor[(2,), float32] attrs {Composite = "
      "\"example_npu.conv2d\", Primitive = 1} {\n"
      "  %b = nn.relu(%a)\n"
      "  return %b\n"
      "}\n";
  Module m = parse_module(text, "calls.kir");
  ASSERT_EQ(m.functions.size(), 2u);
  auto* call = as<CallNode>(m.functions[0]->bindings[0].value);
  ASSERT_NE(call, nullptr);
  EXPECT_FALSE(call->is_op_call());
  EXPECT_EQ(call->callee, "helper");
  EXPECT_EQ(m.functions[1]->attrs.get_string("Composite"), "example_npu.conv2d");
  EXPECT_EQ(m.functions[1]->attrs.get_int("Primitive"), 1);
  // The printer writes exactly this text back.
  EXPECT_EQ(print_module(m), text);
  round_trip(m);
}

TEST(Parser, ScalarsAndSymbolicDims) {
  const char* text =
      "def @f(%s: Tensor[(), float32], %x: Tensor[(?n, 3), float32], %y: Tensor[(?, ?b), int8]) -> "
      "Tensor[(?n, 3), float32] {\n"
      "  %t = nn.relu(%s)\n"
      "  return %x\n"
      "}\n";
  Module m = parse_module(text, "s.kir");
  const FunctionNode& f = *m.functions[0];
  EXPECT_TRUE(f.params[0]->type->tensor.shape.empty());
  EXPECT_EQ(f.params[1]->type->tensor.shape, (Shape{kSymbolicDim, 3}));
  EXPECT_EQ(f.params[1]->type->dim_names, (std::vector<std::string>{"n"}));
  EXPECT_EQ(f.params[2]->type->dim_names, (std::vector<std::string>{"", "b"}));
  EXPECT_EQ(f.bindings[0].value->type->tensor.shape, Shape{});
  round_trip(m);
}

TEST(Parser, CommentsAndFreeLayout) {
  const char* text =
      "# leading comment\n"
      "/* a block\n comment */\n"
      "def @f(%x:Tensor[(2,),float32])->Tensor[(2,),float32]{%y=nn.relu(%x) # why\n"
      "return %y}";
  Module m = parse_module(text, "c.kir");
  EXPECT_EQ(print_module(m),
            "def @f(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
            "  %y = nn.relu(%x)\n"
            "  return %y\n"
            "}\n");
}

TEST(Parser, ModuleAttributes) {
  const char* text =
      "# weights live next to this file\n"
      "module attrs {version = 2, weights = \"cnn.npz\"}\n"
      "\n"
      "def @f(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
      "  return %x\n"
      "}\n";
  Module m = parse_module(text, "m.kir");
  EXPECT_EQ(m.attrs.get_string("weights"), "cnn.npz");
  EXPECT_EQ(m.attrs.get_int("version"), 2);
  EXPECT_EQ(print_module(m), std::string(text).substr(std::strlen("# weights live next to this file\n")));
  round_trip(m);
}

TEST(Parser, EmptyModuleAndEmptyTuple) {
  EXPECT_TRUE(parse_module("  # nothing\n", "e.kir").functions.empty());
  Module m = parse_module("def @f() -> () {\n  return ()\n}\n", "e.kir");
  EXPECT_TRUE(m.functions[0]->ret_type->is_tuple());
  EXPECT_TRUE(m.functions[0]->ret_type->fields.empty());
  round_trip(m);
}

// ---------------------------------------------------------------- constants

TEST(Constants, InlineValuesOfEveryDType) {
  const char* text =
      "def @f() -> (Tensor[(2,), float32], Tensor[(2, 2), int8], Tensor[(3,), bool], "
      "Tensor[(2,), int64], Tensor[(), int32], Tensor[(2,), uint8], Tensor[(2,), float16]) {\n"
      "  %a = const(Tensor[(2,), float32], [1.0, -2.5])\n"
      "  %b = const(Tensor[(2, 2), int8], [-128, 0, 1, 127])\n"
      "  %c = const(Tensor[(3,), bool], [true, false, true])\n"
      "  %d = const(Tensor[(2,), int64], [-9223372036854775808, 9223372036854775807])\n"
      "  %e = const(Tensor[(), int32], [-7])\n"
      "  %g = const(Tensor[(2,), uint8], [0, 255])\n"
      "  %h = const(Tensor[(2,), float16], [0.5, -65504.0])\n"
      "  return (%a, %b, %c, %d, %e, %g, %h)\n"
      "}\n";
  Module m = parse_module(text, "k.kir");
  const auto& b = m.functions[0]->bindings;
  auto value = [&](size_t i) { return as<ConstantNode>(b[i].value)->value; };
  EXPECT_EQ(value(0).data<float>()[1], -2.5f);
  EXPECT_EQ(value(1).data<int8_t>()[0], -128);
  EXPECT_EQ(value(1).data<int8_t>()[3], 127);
  EXPECT_EQ(value(2).data<uint8_t>()[0], 1);
  EXPECT_EQ(value(2).data<uint8_t>()[1], 0);
  EXPECT_EQ(value(3).data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(value(4).shape(), Shape{});
  EXPECT_EQ(value(4).data<int32_t>()[0], -7);
  EXPECT_EQ(value(5).data<uint8_t>()[1], 255);
  EXPECT_EQ(value(6).data<uint16_t>()[0], 0x3800);  // 0.5 in IEEE half
  EXPECT_EQ(value(6).data<uint16_t>()[1], 0xfbff);  // -65504, the most negative half
  // Constants print inline, so this text is a fixed point.
  EXPECT_EQ(print_module(m), text);
  round_trip(m);
}

TEST(Constants, FloatsReadBackBitExactly) {
  std::vector<float> vals = {0.1f,
                             1.0f / 3.0f,
                             -0.0f,
                             std::numeric_limits<float>::denorm_min(),
                             std::numeric_limits<float>::max(),
                             -std::numeric_limits<float>::min(),
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             bits_float(0x7fc00000),  // nan
                             bits_float(0xffc00000),  // -nan (x86's default NaN)
                             16777217.0f,
                             123456.789f};
  Tensor t = Tensor::from_floats({static_cast<int64_t>(vals.size())}, vals);
  Var r = make_var("r", f32({static_cast<int64_t>(vals.size())}));
  Module m = one_function(make_function("f", {}, {{r, make_constant(t)}}, r));
  Module back = round_trip(m);
  Tensor got = as<ConstantNode>(back.functions[0]->bindings[0].value)->value;
  for (size_t i = 0; i < vals.size(); ++i)
    EXPECT_EQ(float_bits(got.data<float>()[i]), float_bits(vals[i])) << i;
  std::string text = print_module(m);
  // Shortest forms, not 17 digits.
  EXPECT_NE(text.find("[0.1, 0.33333334, -0.0, 1e-45, 3.4028235e+38, -1.1754944e-38, inf, -inf, nan, "
                      "-nan, 16777216.0, 123456.79]"),
            std::string::npos)
      << text;
}

TEST(Constants, Float16ReadsBackBitExactly) {
  Tensor t = Tensor::empty({6}, DType::Float16);
  uint16_t halves[] = {0x0001, 0x3555, 0x7bff, 0x8000, 0x7c00, 0x3c01};
  std::memcpy(t.raw(), halves, sizeof halves);
  Var r = make_var("r", tensor_type({6}, DType::Float16));
  Module back = round_trip(one_function(make_function("f", {}, {{r, make_constant(t)}}, r)));
  Tensor got = as<ConstantNode>(back.functions[0]->bindings[0].value)->value;
  EXPECT_EQ(std::memcmp(got.raw(), halves, sizeof halves), 0);
}

TEST(Constants, AsCallArgumentsAndResult) {
  const char* text =
      "def @f(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
      "  %y = add(%x, const(Tensor[(2,), float32], [1, 2]))\n"
      "  return const(Tensor[(2,), float32], [nan, -inf])\n"
      "}\n";
  Module m = parse_module(text, "k.kir");
  auto* add = as<CallNode>(m.functions[0]->bindings[0].value);
  auto* c = as<ConstantNode>(add->args[1]);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->value.data<float>()[1], 2.0f);
  auto* r = as<ConstantNode>(m.functions[0]->result);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(std::isnan(r->value.data<float>()[0]));
  EXPECT_EQ(r->value.data<float>()[1], -std::numeric_limits<float>::infinity());
  round_trip(m);
}

TEST(Constants, NamedConstantsComeFromTheSideStore) {
  ConstantStore side;
  side["conv1.weight"] = Tensor::from_floats({2, 2}, {1, 2, 3, 4});
  const char* text =
      "def @f(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {\n"
      "  %y = add(%x, const(Tensor[(2, 2), float32], \"conv1.weight\"))\n"
      "  return %y\n"
      "}\n";
  Module m = parse_module(text, "w.kir", &side);
  auto* c = as<ConstantNode>(as<CallNode>(m.functions[0]->bindings[0].value)->args[1]);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name, "conv1.weight");
  EXPECT_EQ(c->value.data<float>()[3], 4.0f);
  EXPECT_EQ(print_module(m), text);
  round_trip(m, &side);
}

// ---------------------------------------------------------------- printer naming

TEST(Printer, RenamesDuplicateAndOddVariableNames) {
  Var x = make_var("input.1", f32({2}));
  Var a = make_var("v", f32({2}));
  Var b = make_var("v", f32({2}));
  Var c = make_var("", f32({2}));
  Module m = one_function(make_function("f", {x},
                                        {{a, make_op_call("nn.relu", {x})},
                                         {b, make_op_call("nn.relu", {a})},
                                         {c, make_op_call("add", {a, b})}},
                                        c));
  EXPECT_EQ(print_module(m),
            "def @f(%input_1: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
            "  %v = nn.relu(%input_1)\n"
            "  %v_1 = nn.relu(%v)\n"
            "  %v_2 = add(%v, %v_1)\n"
            "  return %v_2\n"
            "}\n");
  round_trip(m);
}

TEST(Printer, QuotesOddFunctionNamesAndAttributeKeys) {
  Var x = make_var("x", f32({2}));
  Attrs attrs{{"global_symbol", std::string("npu \"main\"\n")}, {"odd key", int64_t{3}}};
  Function g = make_function("example_npu.conv2d_0", {x}, {}, x, attrs);
  Var y = make_var("y", f32({2}));
  Var z = make_var("z", f32({2}));
  Function main = make_function(
      "my main", {y}, {{z, make_function_call("example_npu.conv2d_0", {f32({2})}, f32({2}), {y})}}, z);
  Module m;
  m.functions = {main, g};
  m.attrs.set("floats", std::vector<double>{0.5, -1e-300});
  std::string text = print_module(m);
  EXPECT_NE(text.find("def @\"my main\"(%y"), std::string::npos) << text;
  EXPECT_NE(text.find("%z = @example_npu.conv2d_0(%y)"), std::string::npos) << text;
  EXPECT_NE(text.find("attrs {global_symbol = \"npu \\\"main\\\"\\n\", \"odd key\" = 3}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("module attrs {floats = [0.5, -1e-300]}"), std::string::npos) << text;
  round_trip(m);
}

TEST(Printer, NestedExpressionsReadBack) {
  // Passes keep A-normal form, but a hand-built module may nest calls.
  Var x = make_var("x", f32({4, 2}));
  Expr inner = make_op_call("nn.relu", {x});
  Expr split = make_op_call("split", {inner}, {{"sections", int64_t{2}}});
  Expr field = make_tuple_get_item(split, 1);
  Module m = one_function(make_function("f", {x}, {}, make_op_call("add", {field, field})));
  std::string text = print_module(m);
  EXPECT_NE(text.find("return add(split(nn.relu(%x), axis=0, sections=2, sizes=[]).1, "), std::string::npos)
      << text;
  round_trip(m);
}

// ---------------------------------------------------------------- files

std::filesystem::path temp_dir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("kiln_text_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ModuleIO, SaveNamesBigConstantsAndLoadReadsThemBack) {
  auto dir = temp_dir("save");
  std::vector<float> big(20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = 0.25f * static_cast<float>(i);
  Var x = make_var("x", f32({20}));
  Var y = make_var("y", f32({20}));
  Var z = make_var("z", f32({2}));
  Expr small = make_constant(Tensor::from_floats({2}, {1, 2}));
  Expr named = make_constant(Tensor::from_floats({2}, {5, 6}), "bias");
  Module m = one_function(
      make_function("main", {x},
                    {{y, make_op_call("add", {x, make_constant(Tensor::from_floats({20}, big))})},
                     {z, make_op_call("add", {small, named})}},
                    make_tuple({y, z})));
  std::string path = (dir / "net.kir").string();
  save_module(m, path);
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(text.rfind("module attrs {weights = \"net.npz\"}\n", 0), 0u) << text;
  EXPECT_NE(text.find("const(Tensor[(20,), float32], \"c0\")"), std::string::npos) << text;
  EXPECT_NE(text.find("const(Tensor[(2,), float32], [1.0, 2.0])"), std::string::npos) << text;
  auto side = read_npz((dir / "net.npz").string());
  ASSERT_EQ(side.size(), 2u);
  EXPECT_EQ(side.at("c0").data<float>()[19], 4.75f);
  EXPECT_EQ(side.at("bias").data<float>()[0], 5.0f);

  Module back = load_module(path);
  auto* add = as<CallNode>(back.functions[0]->bindings[0].value);
  auto* c0 = as<ConstantNode>(add->args[1]);
  ASSERT_NE(c0, nullptr);
  EXPECT_EQ(c0->name, "c0");
  EXPECT_EQ(c0->value.data<float>()[7], 1.75f);
  EXPECT_EQ(back.attrs.get_string("weights"), "net.npz");
  std::filesystem::remove_all(dir);
}

TEST(ModuleIO, LoadErrorsNameTheFiles) {
  auto dir = temp_dir("load");
  std::string path = (dir / "a.kir").string();
  try {
    load_module(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cannot open '" + path + "'"), std::string::npos) << e.what();
  }
  {
    std::ofstream out(path);
    out << "module attrs {weights = \"gone.npz\"}\n";
  }
  try {
    load_module(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("gone.npz"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("does not exist"), std::string::npos) << e.what();
  }
  {
    std::ofstream out(path);
    out << "def @f() -> Tensor[(1,), float32] {\n  return const(Tensor[(1,), float32], \"w\")\n}\n";
  }
  try {
    load_module(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_EQ(e.loc().column, 39);
    EXPECT_NE(e.message().find("none was loaded"), std::string::npos) << e.what();
  }
  // With the default side file (a.npz) present, it loads.
  write_npz((dir / "a.npz").string(), {{"w", Tensor::from_floats({1}, {9})}});
  Module m = load_module(path);
  EXPECT_EQ(as<ConstantNode>(m.functions[0]->result)->value.data<float>()[0], 9.0f);
  std::filesystem::remove_all(dir);
}

TEST(ModuleIO, ExamplesAndGoldenFilesRoundTrip) {
  // Every graph-level .kir that ships with kiln parses and round-trips.
  // Files with tensor-level (prim) functions are skipped until those parse.
  int checked = 0;
  for (const char* sub : {"examples", "tests/golden"}) {
    std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / sub;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (entry.path().extension() != ".kir") continue;
      std::ifstream in(entry.path());
      std::string text((std::istreambuf_iterator<char>(in)), {});
      if (text.find("prim @") != std::string::npos) continue;
      // Inputs that are wrong on purpose (error cases of the verifier).
      if (entry.path().parent_path().filename() == "verify") continue;
      SCOPED_TRACE(entry.path().string());
      try {
        Module m = load_module(entry.path().string());
        ConstantStore side;
        std::string printed = print_module(m);
        // Named constants need the side file again for the second parse.
        std::filesystem::path npz = entry.path();
        npz.replace_extension(".npz");
        if (m.attrs.has("weights")) npz = entry.path().parent_path() / m.attrs.get_string("weights");
        if (std::filesystem::exists(npz)) side = read_npz(npz.string());
        Module back = parse_module(printed, "printed.kir", &side);
        EXPECT_TRUE(structural_equal(m, back));
        EXPECT_EQ(print_module(back), printed);
        ++checked;
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace kiln
