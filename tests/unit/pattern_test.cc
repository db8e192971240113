// The pattern language and registry: matching, annotations, priorities,
// unique names and exact backend lookup.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "pattern/registry.h"

namespace kiln {
namespace {

Module parse(const std::string& text) { return parse_module(text, "test.kir"); }

const char* kConvRelu = R"(
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 3, 3), float32]) -> Tensor[(1, 3, 2, 2), float32] {
  %c = nn.conv2d(%x, %w)
  %r = nn.relu(%c)
  return %r
}
)";

TEST(Pattern, OpChainBindsInputsAndAnnotations) {
  Module m = parse(kConvRelu);
  const FunctionNode& f = *m.find("main");
  BindingIndex index(f);
  Pattern p = annotate(
      "root", is_op("nn.relu",
                    {is_op("nn.conv2d", {annotate("input", wildcard()), annotate("weight", wildcard())})}));
  auto match = match_pattern(p, f.bindings[1], index);
  ASSERT_TRUE(match.has_value());
  ASSERT_EQ(match->bindings.size(), 2u);
  EXPECT_EQ(match->bindings[0]->var->name, "c");
  EXPECT_EQ(match->bindings[1]->var->name, "r");
  ASSERT_EQ(match->inputs.size(), 2u);
  EXPECT_EQ(match->inputs[0], f.params[0]);
  EXPECT_EQ(match->inputs[1], f.params[1]);
  EXPECT_EQ(match->first("weight"), f.params[1]);
  EXPECT_EQ(match->first("root"), f.bindings[1].var);
  EXPECT_NE(match->find_call("nn.conv2d"), nullptr);
  // Rooted at the conv, the relu pattern does not match.
  EXPECT_FALSE(match_pattern(p, f.bindings[0], index).has_value());
}

TEST(Pattern, MatchingDoesNotMutate) {
  Module m = parse(kConvRelu);
  std::string before = print_module(m);
  const FunctionNode& f = *m.find("main");
  BindingIndex index(f);
  match_pattern(is_op("nn.relu", {wildcard()}), f.bindings[1], index);
  EXPECT_EQ(print_module(m), before);
}

TEST(Pattern, AttributeConstraintsAndConstants) {
  Module m = parse(R"(
def @main(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] {
  %a = clip(%x, a_min=0.0, a_max=6.0)
  %b = clip(%a, a_min=-1.0, a_max=1.0)
  %c = add(%b, const(Tensor[(4,), float32], [1.0, 2.0, 3.0, 4.0]))
  return %c
}
)");
  const FunctionNode& f = *m.find("main");
  BindingIndex index(f);
  Pattern relu6 = is_op("clip", {wildcard()}, Attrs{{"a_min", 0.0}, {"a_max", 6.0}});
  EXPECT_TRUE(match_pattern(relu6, f.bindings[0], index).has_value());
  EXPECT_FALSE(match_pattern(relu6, f.bindings[1], index).has_value());
  Pattern add_const = is_op("add", {wildcard(), is_constant()});
  auto mc = match_pattern(add_const, f.bindings[2], index);
  ASSERT_TRUE(mc.has_value());
  EXPECT_EQ(mc->constants.size(), 1u);
  EXPECT_FALSE(match_pattern(is_op("add", {is_constant(), wildcard()}), f.bindings[2], index).has_value());
}

TEST(Pattern, AlternativesAndOptional) {
  Module m = parse(R"(
def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(8, 4), float32]) -> Tensor[(2, 8), float32] {
  %d = nn.dense(%x, %w)
  %r = nn.relu(%d)
  %s = sigmoid(%r)
  return %s
}
)");
  const FunctionNode& f = *m.find("main");
  BindingIndex index(f);
  Pattern mm =
      alternatives({is_op("matmul", {wildcard(), wildcard()}), is_op("nn.dense", {wildcard(), wildcard()})});
  EXPECT_TRUE(match_pattern(mm, f.bindings[0], index).has_value());
  // relu is optional: matches with it (2 ops) at %r, and without it at %d.
  Pattern opt = optional_op(is_op("nn.relu", {mm}));
  auto with = match_pattern(opt, f.bindings[1], index);
  ASSERT_TRUE(with.has_value());
  EXPECT_EQ(with->bindings.size(), 2u);
  auto without = match_pattern(opt, f.bindings[0], index);
  ASSERT_TRUE(without.has_value());
  EXPECT_EQ(without->bindings.size(), 1u);
  // The top op must be the root: sigmoid(relu?(dense)) at %s skips nothing.
  EXPECT_FALSE(match_pattern(opt, f.bindings[2], index).has_value());
  EXPECT_EQ(pattern_str(opt), "nn.relu((matmul(*, *) | nn.dense(*, *)))?");
}

TEST(Pattern, BuilderErrors) {
  try {
    is_op("nn.not_an_op", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'nn.not_an_op'"), std::string::npos);
  }
  try {
    is_op("nn.relu", {wildcard()}, Attrs{{"alpha", 1.0}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no attribute 'alpha'"), std::string::npos);
  }
  EXPECT_THROW(optional_op(wildcard()), Error);
}

TEST(PatternRegistry, PriorityThenRegistrationOrder) {
  PatternRegistry r;
  r.add({"npu.low", is_op("nn.relu", {wildcard()}), nullptr, 1, ""});
  r.add({"npu.high", is_op("nn.relu", {wildcard()}), nullptr, 9, ""});
  r.add({"npu.tie_a", is_op("nn.relu", {wildcard()}), nullptr, 5, ""});
  r.add({"npu.tie_b", is_op("nn.relu", {wildcard()}), nullptr, 5, ""});
  std::vector<std::string> names;
  for (const auto* e : r.for_backend("npu")) names.push_back(e->name);
  EXPECT_EQ(names, (std::vector<std::string>{"npu.high", "npu.tie_a", "npu.tie_b", "npu.low"}));
}

TEST(PatternRegistry, ReRegisteringReplaces) {
  PatternRegistry r;
  r.add({"npu.a", is_op("nn.relu", {wildcard()}), nullptr, 1, "first"});
  r.add({"npu.b", is_op("tanh", {wildcard()}), nullptr, 1, ""});
  r.add({"npu.a", is_op("sigmoid", {wildcard()}), nullptr, 3, "second"});
  ASSERT_EQ(r.entries().size(), 2u);
  EXPECT_EQ(r.find("npu.a")->description, "second");
  EXPECT_EQ(r.find("npu.a")->pattern->op, "sigmoid");
  EXPECT_EQ(r.for_backend("npu")[0]->name, "npu.a");
}

TEST(PatternRegistry, BackendLookupIsExact) {
  PatternRegistry r;
  r.add({"example_npu.relu", is_op("nn.relu", {wildcard()}), nullptr, 1, ""});
  r.add({"example_npu2.add", is_op("add", {wildcard(), wildcard()}), nullptr, 1, ""});
  ASSERT_EQ(r.for_backend("example_npu").size(), 1u);
  EXPECT_EQ(r.for_backend("example_npu")[0]->name, "example_npu.relu");
  EXPECT_TRUE(r.for_backend("example").empty());
  EXPECT_EQ(r.backends(), (std::vector<std::string>{"example_npu", "example_npu2"}));
  r.remove_backend("example_npu");
  EXPECT_EQ(r.backends(), (std::vector<std::string>{"example_npu2"}));
}

TEST(PatternRegistry, RejectsMalformedNames) {
  PatternRegistry r;
  for (const char* bad : {"noprefix", ".x", "npu.", "np-u.x", "npu.a.b"}) {
    try {
      r.add({bad, wildcard(), nullptr, 0, ""});
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("must be <backend>.<pattern>"), std::string::npos) << bad;
    }
  }
}

TEST(PatternRegistry, ExampleNpuIsRegistered) {
  const PatternEntry* e = pattern_registry().find("example_npu.matmul_relu_fused");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->backend(), "example_npu");
  EXPECT_GT(e->priority, pattern_registry().find("example_npu.matmul")->priority);
  EXPECT_EQ(e->annotations(), (std::vector<std::string>{"root", "input", "weight"}));
}

}  // namespace
}  // namespace kiln
