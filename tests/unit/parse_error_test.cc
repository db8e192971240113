// Malformed .kir text: each case checks the message and its line:column.
#include <gtest/gtest.h>

#include <string>

#include "ir/text.h"

namespace kiln {
namespace {

struct BadInput {
  const char* name;
  std::string text;
  int line;
  int column;
  const char* message;  // a part of the expected message
};

// A one-function module around `body` (lines 2.. of the text).
std::string fn(const std::string& body,
               const std::string& header = "def @f(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {") {
  return header + "\n" + body + "}\n";
}

class ParseError : public ::testing::TestWithParam<BadInput> {};

TEST_P(ParseError, ReportsMessageAndLocation) {
  const BadInput& c = GetParam();
  try {
    parse_module(c.text, "bad.kir");
    FAIL() << "no error for:\n" << c.text;
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(c.message), std::string::npos)
        << "message: " << e.message() << "\nwanted: " << c.message;
    EXPECT_EQ(e.loc().file, "bad.kir");
    EXPECT_EQ(e.loc().line, c.line) << e.what();
    EXPECT_EQ(e.loc().column, c.column) << e.what();
    // The context is the source line and a caret under the column.
    auto nl = e.context().find('\n');
    ASSERT_NE(nl, std::string::npos) << e.what();
    std::string caret = e.context().substr(nl + 1);
    EXPECT_EQ(caret.back(), '^') << e.what();
    // Long lines are shown as a window ("...") around the column.
    if (e.context().rfind("...", 0) != 0) {
      EXPECT_EQ(static_cast<int>(caret.size()), c.column) << e.what();
    }
  }
}

const std::string kSig = "def @f(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {";

INSTANTIATE_TEST_SUITE_P(
    Kir, ParseError,
    ::testing::Values(
        BadInput{"UnknownOp", fn("  %y = nn.frobnicate(%x)\n  return %y\n"), 2, 8,
                 "unknown op 'nn.frobnicate'"},
        BadInput{"UndefinedVariable", fn("  %y = nn.relu(%q)\n  return %y\n"), 2, 16,
                 "use of undefined variable %q"},
        BadInput{"UseBeforeDefinition", fn("  %y = nn.relu(%z)\n  %z = nn.relu(%x)\n  return %y\n"), 2, 16,
                 "use of undefined variable %z"},
        BadInput{"DuplicateVariable", fn("  %y = nn.relu(%x)\n  %y = nn.relu(%x)\n  return %y\n"), 3, 3,
                 "duplicate variable %y (first defined at bad.kir:2:3)"},
        BadInput{"BindingShadowsParameter", fn("  %x = nn.relu(%x)\n  return %x\n"), 2, 3,
                 "duplicate variable %x (first defined at bad.kir:1:8)"},
        BadInput{"DuplicateParameter",
                 "def @f(%x: Tensor[(2,), float32], %x: Tensor[(2,), float32]) -> Tensor[(2,), "
                 "float32] {\n  return %x\n}\n",
                 1, 35, "duplicate parameter %x"},
        BadInput{"DuplicateFunction", fn("  return %x\n") + fn("  return %x\n"), 4, 5,
                 "duplicate function @f (first defined at bad.kir:1:5)"},
        BadInput{"UnknownFunction", fn("  %y = @nothere(%x)\n  return %y\n"), 2, 8,
                 "call of unknown function @nothere"},
        BadInput{"FunctionArity",
                 fn("  %y = @g(%x, %x)\n  return %y\n") +
                     "def @g(%a: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n  return %a\n}\n",
                 2, 8, "@g takes 1 argument(s), got 2"},
        BadInput{"FunctionArgumentType",
                 fn("  %y = @g(%x)\n  return %y\n") +
                     "def @g(%a: Tensor[(3,), float32]) -> Tensor[(3,), float32] {\n  return %a\n}\n",
                 2, 8, "argument 0 has type Tensor[(2,), float32], expected Tensor[(3,), float32]"},
        BadInput{"OpTypeError",
                 fn("  %y = matmul(%x, %x, out_dtype=\"\")\n  return %y\n",
                    "def @f(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {"),
                 2, 8, "matmul"},
        BadInput{"UnknownAttribute", fn("  %y = nn.relu(%x, slope=2)\n  return %y\n"), 2, 8,
                 "nn.relu: unknown attribute 'slope'"},
        BadInput{"AttributeOfWrongKind", fn("  %y = nn.leaky_relu(%x, alpha=\"big\")\n  return %y\n"), 2, 8,
                 "attribute 'alpha' must be a float"},
        BadInput{"DuplicateAttribute", fn("  %y = nn.leaky_relu(%x, alpha=0.5, alpha=0.5)\n  return %y\n"), 2,
                 37, "duplicate attribute 'alpha'"},
        BadInput{"PositionalAfterKeyword", fn("  %y = add(%x, axis=1, %x)\n  return %y\n"), 2, 24,
                 "positional argument after keyword attributes"},
        BadInput{"BadAttributeValue", fn("  %y = nn.leaky_relu(%x, alpha=%x)\n  return %y\n"), 2, 32,
                 "expected an attribute value"},
        BadInput{"ReturnTypeMismatch",
                 fn("  return %x\n", "def @f(%x: Tensor[(2,), float32]) -> Tensor[(3,), float32] {"), 1, 38,
                 "@f declares return type Tensor[(3,), float32] but returns Tensor[(2,), float32]"},
        BadInput{"BadNumber", fn("  %y = nn.leaky_relu(%x, alpha=1.5x)\n  return %y\n"), 2, 32,
                 "bad number '1.5x'"},
        BadInput{"BadExponent", fn("  %y = nn.leaky_relu(%x, alpha=1e+)\n  return %y\n"), 2, 32,
                 "expected digits in the exponent"},
        BadInput{"IntegerOutOfRange", fn("  %y = nn.relu(%x, a=99999999999999999999)\n  return %y\n"), 2, 22,
                 "out of range for int64"},
        BadInput{"FloatOutOfRange", fn("  %y = nn.leaky_relu(%x, alpha=1e999)\n  return %y\n"), 2, 32,
                 "float 1e999 is out of range"},
        BadInput{"UnterminatedString", fn("  %y = nn.gelu(%x, approximate=\"tanh)\n  return %y\n"), 2, 32,
                 "unterminated string"},
        BadInput{"UnknownEscape", fn("  %y = nn.gelu(%x, approximate=\"a\\qb\")\n  return %y\n"), 2, 34,
                 "unknown escape '\\q'"},
        BadInput{"UnterminatedComment", fn("  /* never closed\n  return %x\n"), 2, 3, "unterminated comment"},
        BadInput{"UnexpectedEndOfFile", kSig + "\n  %y = nn.relu(%x)\n  return %y\n", 4, 1,
                 "unexpected end of file"},
        BadInput{"EndInsideHeader", "def @f(%x: Tensor[(2,), float32", 1, 32, "unexpected end of file"},
        BadInput{"TrailingJunk", fn("  return %x\n") + "}\n", 4, 1, "expected 'def' or 'prim', found '}'"},
        BadInput{"JunkAfterReturn", fn("  return %x %x\n"), 2, 13,
                 "expected '}' after the return value of @f"},
        BadInput{"MissingReturn", fn("  %y = nn.relu(%x)\n"), 3, 1, "@f has no 'return'"},
        BadInput{"UnexpectedCharacter", fn("  %y = nn.relu(%x) $\n  return %y\n"), 2, 20,
                 "unexpected character '$'"},
        BadInput{"UnknownDType", "def @f(%x: Tensor[(2,), float96]) -> Tensor[(2,), float96] {\n}\n", 1, 25,
                 "unknown element type 'float96'"},
        BadInput{"NegativeDimension", "def @f(%x: Tensor[(2, -1), float32]) -> Tensor[(2,), float32] {\n}\n",
                 1, 23, "negative dimension -1"},
        // A bounded dynamic dimension (<=N): a bound right after '<=', >= 0,
        // on the leading axis only, never on a constant.
        BadInput{"BoundWithoutValue", "def @f(%x: Tensor[(<=, 3), int64]) -> Tensor[(2,), float32] {\n}\n", 1,
                 22, "expected a bound directly after '<='"},
        BadInput{"NegativeBound", "def @f(%x: Tensor[(<=-1, 3), int64]) -> Tensor[(2,), float32] {\n}\n", 1,
                 22, "negative bound -1 after '<='"},
        BadInput{"BoundNotANumber", "def @f(%x: Tensor[(<=abc, 3), int64]) -> Tensor[(2,), float32] {\n}\n",
                 1, 22, "expected a bound directly after '<='"},
        BadInput{"LessWithoutEquals", "def @f(%x: Tensor[(<4, 3), int64]) -> Tensor[(2,), float32] {\n}\n", 1,
                 21, "expected '<=' and a bound"},
        BadInput{"BoundOnALaterAxis", "def @f(%x: Tensor[(3, <=4), int64]) -> Tensor[(2,), float32] {\n}\n",
                 1, 23, "may only be the leading one (axis 0), not axis 1"},
        BadInput{"BoundedConstant", fn("  %y = const(Tensor[(<=2,), float32], [1.0, 2.0])\n  return %y\n"), 2,
                 14, "a constant cannot have a bounded dynamic dimension"},
        BadInput{"HugeShape",
                 "def @f(%x: Tensor[(1000000000, 1000000000), float32]) -> Tensor[(2,), float32] {\n}\n", 1,
                 32, "shape is too large"},
        BadInput{"WrongConstantCount", fn("  %c = const(Tensor[(3,), float32], [1.0, 2.0])\n  return %x\n"),
                 2, 37, "wrong number of values: Tensor[(3,), float32] has 3 element(s), got 2"},
        BadInput{"TooManyConstantValues",
                 fn("  %c = const(Tensor[(1,), float32], [1.0, 2.0])\n  return %x\n"), 2, 43,
                 "too many values"},
        BadInput{"ConstantIntOutOfRange", fn("  %c = const(Tensor[(2,), int8], [1, 300])\n  return %x\n"), 2,
                 38, "value 300 is out of range for int8"},
        BadInput{"ConstantFloatForInt", fn("  %c = const(Tensor[(1,), int32], [1.5])\n  return %x\n"), 2, 36,
                 "expected an integer, found number 1.5"},
        BadInput{"ConstantFloat16Overflow",
                 fn("  %c = const(Tensor[(1,), float16], [70000.0])\n  return %x\n"), 2, 38,
                 "value 70000.0 is out of range for float16"},
        BadInput{"ConstantBool", fn("  %c = const(Tensor[(1,), bool], [1])\n  return %x\n"), 2, 35,
                 "expected true or false"},
        BadInput{"NamedConstantWithoutSideFile",
                 fn("  %c = const(Tensor[(1,), float32], \"w\")\n  return %x\n"), 2, 37,
                 "refers to the side file, but none was loaded"},
        BadInput{"TupleIndexOutOfRange", fn("  %t = (%x, %x)\n  %a = %t.2\n  return %a\n"), 3, 11,
                 "tuple index 2 out of range"},
        BadInput{"FieldOfTensor", fn("  %a = %x.0\n  return %a\n"), 2, 11,
                 "cannot take field 0 of a non-tuple"},
        BadInput{"PrimTakesBuffersNotTensors", "prim @kernel(%a: Tensor[(2,), float32]) {\n}\n", 1, 18,
                 "unknown type 'Tensor'"},
        BadInput{"ModuleAttrsNotFirst", fn("  return %x\n") + "module attrs {a = 1}\n", 4, 1,
                 "module attributes must come before the first function"},
        BadInput{"MissingArrow", "def @f(%x: Tensor[(2,), float32]) {\n  return %x\n}\n", 1, 35,
                 "expected '->' and the return type"},
        BadInput{"DeepTupleType",
                 "def @f(%x: " + std::string(200, '(') + "Tensor[(2,), float32]" + std::string(200, ')') +
                     ") -> Tensor[(2,), float32] {\n}\n",
                 1, 77, "nesting is deeper than 64 levels"},
        BadInput{"DeepExpression",
                 fn("  %a = " + std::string(200, '(') + "%x" + std::string(200, ')') + "\n  return %a\n"), 2,
                 73, "nesting is deeper than 64 levels"},
        BadInput{"OpNameWithoutCall", fn("  %y = relu\n  return %y\n"), 2, 8,
                 "an op call needs its arguments in parentheses"},
        BadInput{"NulByte", std::string("def @f\0", 7), 1, 7, "unexpected character byte 0x00"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

// The parser and the ONNX importer share check_shape_extent's rule: a 0
// after dimensions whose product passes 2^48 makes the shape empty, and
// legal (onnx_fuzz found the importer accepting what the parser refused).
TEST(ParseErrorText, EmptyShapeAfterALargePrefixParses) {
  std::string text =
      "def @f(%x: Tensor[(1000000000, 1000000000, 0), float32]) -> Tensor[(1000000000, 1000000000, 0), "
      "float32] {\n  return %x\n}\n";
  Module m = parse_module(text, "empty.kir");
  EXPECT_EQ(m.functions.size(), 1u);
}

TEST(ParseErrorText, WhatShowsFileLineCaret) {
  std::string text = fn("  %y = nn.frobnicate(%x)\n  return %y\n");
  try {
    parse_module(text, "model.kir");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.kir:2:8: unknown op 'nn.frobnicate' (`kiln ops` lists the known ops)\n"
              "  %y = nn.frobnicate(%x)\n"
              "       ^");
  }
}

TEST(ParseErrorText, SideFileShapeMismatch) {
  ConstantStore side;
  side["w"] = Tensor::from_floats({2}, {1, 2});
  try {
    parse_module(fn("  %c = const(Tensor[(3,), float32], \"w\")\n  return %x\n"), "m.kir", &side);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_EQ(e.message(),
              "constant \"w\" is Tensor[(2,), float32] in the side file, but Tensor[(3,), float32] here");
  }
  try {
    parse_module(fn("  %c = const(Tensor[(2,), float32], \"v\")\n  return %x\n"), "m.kir", &side);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "constant \"v\" is not in the side file");
  }
}

TEST(ParseErrorText, NeverCrashesOnTruncations) {
  // Every prefix of a valid module either parses or throws kiln::Error.
  std::string text =
      "module attrs {weights = \"w.npz\"}\n"
      "def @main(%x: Tensor[(1, 2, 4, 4), float32]) -> (Tensor[(1, 2, 4, 4), float32],) attrs {a = [1.5]} {\n"
      "  %c = const(Tensor[(2,), float32], [1.0, -inf])\n"
      "  %y = nn.conv2d(%x, const(Tensor[(2, 2, 1, 1), float32], [1.0, 0.0, 0.0, 1.0]), padding=[0, 0, 0, "
      "0])\n"
      "  %s = split(%y, axis=1, sections=2)\n"
      "  %t = (%y,)\n"
      "  return %t /* end */\n"
      "}\n";
  EXPECT_NO_THROW(parse_module(text, "p.kir"));
  for (size_t n = 0; n < text.size(); ++n) {
    try {
      parse_module(text.substr(0, n), "p.kir");
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace kiln
