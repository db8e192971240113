// Inputs the fuzzers (tests/fuzz/, `make fuzz`) found to crash kiln or reach
// undefined behaviour, each with the error it must give instead. The inputs
// are also kept in tests/fuzz/corpus/<target>/, which the *_corpus tests
// replay; these tests check the message, which the normal build (no UBSan)
// could not tell from the silent wrong answer.
#include <gtest/gtest.h>

#include "ir/text.h"

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

}  // namespace
}  // namespace kiln
