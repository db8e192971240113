// Graph IR: constructors with type inference, structural equality and
// hashing, the verifier, the mutator's identity guarantee, and the
// interpreter against hand-computed values.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

Type f32(Shape s) { return tensor_type(std::move(s), DType::Float32); }

// def @main(%x: (2, 3), %y: (2, 3)) { %a = add(%x, %y); %b = nn.relu(%a); return %b }
Module add_relu_module() {
  Var x = make_var("x", f32({2, 3}));
  Var y = make_var("y", f32({2, 3}));
  Var a = make_var("a", f32({2, 3}));
  Var b = make_var("b", f32({2, 3}));
  std::vector<Binding> bs = {{a, make_op_call("add", {x, y})}, {b, make_op_call("nn.relu", {a})}};
  Module m;
  m.functions.push_back(make_function("main", {x, y}, bs, b));
  return m;
}

TEST(Ir, CallTypesAreInferred) {
  Var x = make_var("x", f32({2, 4}));
  Var w = make_var("w", f32({4, 8}));
  Expr mm = make_op_call("matmul", {x, w});
  EXPECT_EQ(type_str(mm->type), "Tensor[(2, 8), float32]");
  Expr tup = make_tuple({x, mm});
  EXPECT_EQ(type_str(tup->type), "(Tensor[(2, 4), float32], Tensor[(2, 8), float32])");
  EXPECT_EQ(type_str(make_tuple_get_item(tup, 1)->type), "Tensor[(2, 8), float32]");
}

TEST(Ir, TypeErrorsAreValuesWithLocations) {
  Var x = make_var("x", f32({2, 3}));
  Var w = make_var("w", f32({4, 8}));
  try {
    make_op_call("matmul", {x, w}, {}, SourceLoc{"m.kir", 3, 8});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_op_call("no.such_op", {x}), Error);
  EXPECT_THROW(make_tuple_get_item(make_tuple({x}), 1), Error);
  EXPECT_THROW(make_tuple_get_item(x, 0), Error);
}

TEST(Ir, StructuralEqualityIgnoresNamesButNotStructure) {
  Module a = add_relu_module();
  Module b = add_relu_module();
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));

  // Same ops, arguments swapped: not equal.
  Var x = make_var("x", f32({2, 3}));
  Var y = make_var("y", f32({2, 3}));
  Var s = make_var("s", f32({2, 3}));
  Var r = make_var("r", f32({2, 3}));
  Module c;
  c.functions.push_back(make_function(
      "main", {x, y}, {{s, make_op_call("add", {y, x})}, {r, make_op_call("nn.relu", {s})}}, r));
  EXPECT_FALSE(structural_equal(a, c));
}

TEST(Ir, VerifierRejectsUseBeforeDefinitionAndReassignment) {
  Var x = make_var("x", f32({2}));
  Var a = make_var("a", f32({2}));
  Var b = make_var("b", f32({2}));
  Module m;
  m.functions.push_back(
      make_function("main", {x}, {{a, make_op_call("add", {x, b})}, {b, make_op_call("nn.relu", {x})}}, a));
  try {
    verify_module(m);
    FAIL() << "expected a verifier error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("%b is used before it is defined"), std::string::npos) << e.what();
  }
  Module twice;
  twice.functions.push_back(
      make_function("main", {x}, {{a, make_op_call("nn.relu", {x})}, {a, make_op_call("nn.relu", {x})}}, a));
  EXPECT_THROW(verify_module(twice), Error);
  verify_module(add_relu_module());
}

TEST(Ir, MutatorReturnsSameFunctionWhenNothingChanges) {
  Module m = add_relu_module();
  ExprMutator identity(&m);
  EXPECT_EQ(identity.mutate_function(m.functions[0]), m.functions[0]);
  Module folded = fold_constants(m);
  EXPECT_EQ(folded.functions[0], m.functions[0]);
  EXPECT_EQ(eliminate_dead_code(m).functions[0], m.functions[0]);
}

TEST(Interpreter, AddReluValues) {
  Module m = add_relu_module();
  Tensor x = Tensor::from_floats({2, 3}, {1, -2, 3, -4, 5, -6});
  Tensor y = Tensor::from_floats({2, 3}, {0.5f, 1, -4, 2, -5.5f, 7});
  std::vector<Tensor> out = interpret(m, "main", {x, y});
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> want = {1.5f, 0, 0, 0, 0, 1};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[0].data<float>()[i], want[i]) << i;
}

TEST(Interpreter, CallsModuleFunctionsAndFlattensTuples) {
  // @double(%v) = add(%v, %v); @main(%x) = (@double(%x), nn.relu(%x))
  Var v = make_var("v", f32({3}));
  Var d = make_var("d", f32({3}));
  Function dbl = make_function("double", {v}, {{d, make_op_call("add", {v, v})}}, d);
  Var x = make_var("x", f32({3}));
  Var c = make_var("c", f32({3}));
  Var r = make_var("r", f32({3}));
  Module m;
  m.functions.push_back(make_function(
      "main", {x},
      {{c, make_function_call("double", {f32({3})}, f32({3}), {x})}, {r, make_op_call("nn.relu", {x})}},
      make_tuple({c, r})));
  m.functions.push_back(dbl);
  verify_module(m);
  auto out = interpret(m, "main", {Tensor::from_floats({3}, {-1, 0, 2})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<float>()[0], -2.0f);
  EXPECT_EQ(out[0].data<float>()[2], 4.0f);
  EXPECT_EQ(out[1].data<float>()[0], 0.0f);
  EXPECT_EQ(out[1].data<float>()[2], 2.0f);
}

TEST(Interpreter, RejectsArgumentsOfTheWrongShapeOrDtype) {
  Module m = add_relu_module();
  Tensor good = Tensor::zeros({2, 3}, DType::Float32);
  try {
    interpret(m, "main", {good, Tensor::zeros({3, 2}, DType::Float32)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("%y has shape (3, 2)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(interpret(m, "main", {good, Tensor::zeros({2, 3}, DType::Int32)}), Error);
  EXPECT_THROW(interpret(m, "main", {good}), Error);
  EXPECT_THROW(interpret(m, "nope", {good, good}), Error);
}

TEST(Interpreter, RecursionIsAnErrorNotACrash) {
  Var v = make_var("v", f32({1}));
  Var r = make_var("r", f32({1}));
  Module m;
  m.functions.push_back(
      make_function("loop", {v}, {{r, make_function_call("loop", {f32({1})}, f32({1}), {v})}}, r));
  EXPECT_THROW(interpret(m, "loop", {Tensor::zeros({1}, DType::Float32)}), Error);
}

TEST(Passes, FoldConstantsComputesWithReferenceKernels) {
  Var x = make_var("x", f32({2}));
  Var c = make_var("c", f32({2}));
  Var d = make_var("d", f32({2}));
  Expr k1 = make_constant(Tensor::from_floats({2}, {1, 2}));
  Expr k2 = make_constant(Tensor::from_floats({2}, {3, 4.5f}));
  Module m;
  m.functions.push_back(make_function(
      "main", {x}, {{c, make_op_call("add", {k1, k2})}, {d, make_op_call("multiply", {x, c})}}, d));
  Module out = eliminate_dead_code(fold_constants(m));
  const FunctionNode& f = *out.functions[0];
  ASSERT_EQ(f.bindings.size(), 1u);
  auto* mul = as<CallNode>(f.bindings[0].value);
  ASSERT_NE(mul, nullptr);
  auto* folded = as<ConstantNode>(mul->args[1]);
  ASSERT_NE(folded, nullptr);
  EXPECT_EQ(folded->value.data<float>()[0], 4.0f);
  EXPECT_EQ(folded->value.data<float>()[1], 6.5f);
  // Same values before and after.
  Tensor in = Tensor::from_floats({2}, {2, -1});
  EXPECT_TRUE(interpret(m, "main", {in})[0].bitwise_equal(interpret(out, "main", {in})[0]));
}

TEST(Passes, UnknownPassIsAnErrorBeforeAnythingRuns) {
  try {
    run_passes(add_relu_module(), {"fold-constants", "nope"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'nope'"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln
