// One module, one .kir text: graph `def` functions and tensor-level `prim`
// functions side by side, printed and parsed with an exact round trip.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/text.h"
#include "tir/text.h"
#include "tir/tir.h"

namespace kiln {
namespace {

const char* kMixed = R"(def @main(%x: Tensor[(2, 4), float32]) -> Tensor[(2, 4), float32] {
  %y = nn.relu(%x)
  return %y
}

prim @add(%A: Buffer[(16), int8], %B: Buffer[(16), int8], %C: Buffer[(16), int8]) {
  allocate %A_buf: Buffer[(16), int8, scope="local.vtcm", align=128]
  for %i from 0 extent 16 {
    %A_buf[%i] = %A[%i]
  }
  for %i0 from 0 extent 16 {
    %C[%i0] = %A_buf[%i0] + %B[%i0]
  }
  return 0
}
)";

std::string parse_error(const std::string& text) {
  try {
    parse_module(text, "mixed.kir");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TirModuleText, DefAndPrimRoundTripExactly) {
  Module m = parse_module(kMixed, "mixed.kir");
  ASSERT_EQ(m.functions.size(), 1u);
  ASSERT_EQ(m.prim_functions.size(), 1u);
  EXPECT_EQ(m.functions[0]->name, "main");
  EXPECT_EQ(m.prim_functions[0]->name, "add");
  EXPECT_EQ(m.prim_functions[0]->params.size(), 3u);
  EXPECT_EQ(print_module(m), kMixed);
  Module again = parse_module(print_module(m), "again.kir");
  EXPECT_TRUE(structural_equal(m, again));
  EXPECT_EQ(structural_hash(m), structural_hash(again));
}

TEST(TirModuleText, StructuralEqualityLooksIntoPrimFunctions) {
  Module a = parse_module(kMixed, "a.kir");
  std::string changed = kMixed;
  // The same module with a different constant in the prim function.
  auto pos = changed.find("extent 16 {\n    %C");
  ASSERT_NE(pos, std::string::npos);
  changed.replace(pos, 9, "extent 15");
  Module b = parse_module(changed, "b.kir");
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_NE(structural_hash(a), structural_hash(b)) << "the hash looks into prim bodies too";
  Module no_prim = a;
  no_prim.prim_functions.clear();
  EXPECT_FALSE(structural_equal(a, no_prim));
  // Renaming variables and buffers keeps modules equal, and their hashes.
  std::string renamed = kMixed;
  for (size_t p; (p = renamed.find("%i0")) != std::string::npos;) renamed.replace(p, 3, "%k");
  for (size_t p; (p = renamed.find("%A_buf")) != std::string::npos;) renamed.replace(p, 6, "%scratch");
  Module c = parse_module(renamed, "c.kir");
  EXPECT_TRUE(structural_equal(a, c));
  EXPECT_EQ(structural_hash(a), structural_hash(c));
}

TEST(TirModuleText, PrimHashSeesEveryKindOfChange) {
  Module a = parse_module(kMixed, "a.kir");
  const tir::PrimFuncNode& base = *a.prim_functions[0];
  // Each edit changes one thing the equality compares: the hash must change too.
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"scope=\"local.vtcm\"", "scope=\"global.vtcm\""},
      {"align=128", "align=64"},
      {"%A_buf[%i0] + %B[%i0]", "%A_buf[%i0] - %B[%i0]"},
      {"%C[%i0] = %A_buf[%i0]", "%C[%i0 * 1] = %A_buf[%i0]"},
      {"extent 16 {\n    %A_buf", "extent 8 {\n    %A_buf"},
      {"return 0", "return 1"},
      {"prim @add", "prim @add2"},
      {"for %i0 from 0 extent 16 {", "for %i0 from 0 extent 16 vectorized {"},
  };
  for (const auto& [from, to] : edits) {
    std::string text = kMixed;
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    Module b = parse_module(text, "b.kir");
    const tir::PrimFuncNode& changed = *b.prim_functions[0];
    EXPECT_FALSE(tir::structural_equal(base, changed)) << to;
    EXPECT_NE(tir::structural_hash(base), tir::structural_hash(changed)) << to;
  }
}

TEST(TirModuleText, PrimOnlyModule) {
  std::string text = std::string(kMixed).substr(std::string(kMixed).find("prim"));
  Module m = parse_module(text, "prim.kir");
  EXPECT_TRUE(m.functions.empty());
  ASSERT_EQ(m.prim_functions.size(), 1u);
  EXPECT_EQ(print_module(m), text);
}

TEST(TirModuleText, DuplicateNameAcrossDefAndPrimIsAnError) {
  std::string text = std::string(kMixed);
  auto pos = text.find("prim @add");
  text.replace(pos, 9, "prim @main");
  std::string err = parse_error(text);
  EXPECT_NE(err.find("duplicate function @main"), std::string::npos) << err;
  EXPECT_NE(err.find("mixed.kir:1"), std::string::npos) << err;
}

TEST(TirModuleText, PrimSyntaxErrorsPointAtTheToken) {
  std::string text = std::string(kMixed);
  auto pos = text.find("extent 16 {\n    %A_buf");
  text.replace(pos, 6, "extnt");
  std::string err = parse_error(text);
  EXPECT_NE(err.find("mixed.kir:8"), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln
