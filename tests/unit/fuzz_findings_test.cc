// Inputs the fuzzers (tests/fuzz/, `make fuzz`) found to crash kiln or reach
// undefined behaviour, each with the error it must give instead. The inputs
// are also kept in tests/fuzz/corpus/<target>/, which the *_corpus tests
// replay; these tests check the message, which the normal build (no UBSan)
// could not tell from the silent wrong answer.
#include <gtest/gtest.h>

#include "frontend/onnx/importer.h"
#include "ir/text.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_module(text, "fuzz.kir");
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed)";
}

// parse_fuzz: src/tir/parser.cc negated the literal of `%x -9223372036854775808`
// (a subtraction of 2^63), a signed overflow.
TEST(FuzzFindings, SubtractingTwoToThe63IsAnError) {
  std::string msg = parse_error(
      "prim @f(%A: Buffer[(4), int64]) {\n  for %i0 from 0 extent 4 {\n"
      "    %A[%i0] = %i0 -9223372036854775808\n  }\n  return 0\n}\n");
  EXPECT_NE(msg.find("fuzz.kir:3:19: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("integer 9223372036854775808 does not fit int32 (nor int64)"), std::string::npos) << msg;
}

// parse_fuzz: the tensor-IR parser recursed once per parenthesis, so a few
// thousand of them overflowed the stack.
TEST(FuzzFindings, DeeplyNestedTensorExpressionsAreAnError) {
  std::string deep = "prim @f(%A: Buffer[(4), int64]) {\n  for %i0 from 0 extent " + std::string(1000, '(') +
                     "4" + std::string(1000, ')') + " {\n    %A[%i0] = %i0\n  }\n  return 0\n}\n";
  std::string msg = parse_error(deep);
  EXPECT_NE(msg.find("fuzz.kir:2:"), std::string::npos) << msg.substr(0, 200);
  EXPECT_NE(msg.find("nesting is deeper than 256 levels; split the expression or the loop nest"),
            std::string::npos)
      << msg.substr(0, 200);
  // 200 levels still parse.
  std::string fine = "prim @f(%A: Buffer[(4), int32]) {\n  for %i0 from 0 extent " + std::string(200, '(') +
                     "4" + std::string(200, ')') + " {\n    %A[%i0] = %i0\n  }\n  return 0\n}\n";
  EXPECT_EQ(parse_error(fine), "(parsed)");
}

// onnx_fuzz: an ONNX name that is not UTF-8 was imported as it was, and the
// .kir text `kiln import` wrote could not be read back by kiln's lexer.
TEST(FuzzFindings, OnnxNamesMustBeUtf8) {
  onnx_test::ModelBuilder b;
  b.input("x\xf3y", {3, 4});
  auto* n = b.node("Softmax", {"x\xf3y"}, {"y"});
  (void)n;
  b.output("y", {3, 4});
  std::string msg;
  try {
    import_onnx_bytes(b.bytes(), "m.onnx");
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("m.onnx: the input name \"x\\xf3y\" is not valid UTF-8 (byte 0xf3 at offset 1); ONNX "
                     "strings are UTF-8: fix the name in the exporter"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace kiln
