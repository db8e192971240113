// Bounded dynamic dimensions (TensorDesc::bounded_outer, `<=N` in .kir): the
// type in text, which ops accept it, and a detection chain
// image.non_max_suppression -> take -> take run by the interpreter, by the
// compiled path (VM), from a .kmod file and through the C API, each with the
// trimmed shapes and values worked out below.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "kiln/kiln.h"
#include "runtime/graph.h"
#include "runtime/module_file.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing::error_of;

Module parse(const std::string& text) { return parse_module(text, "test.kir"); }

// Boxes [y1, x1, y2, x2], shifted by 1 before suppression (a compiled
// kernel): box 1 overlaps box 0 (IoU 0.818 > 0.5), boxes 2 and 3 are apart.
// By score 3 (0.95), 0 (0.9), 1 (0.8, suppressed by 0), 2 (0.7): the
// selection is boxes 3, 0, 2; their shifted coordinates are gathered and
// negated.
const char* kChain =
    R"(def @main(%boxes: Tensor[(1, 4, 4), float32], %scores: Tensor[(1, 1, 4), float32]) -> (Tensor[(<=4, 3), int64], Tensor[(<=4, 4), float32]) {
  %shifted = add(%boxes, const(Tensor[(1,), float32], [1.0]))
  %sel = image.non_max_suppression(%shifted, %scores, center_point_box=0, iou_threshold=0.5, max_output_boxes_per_class=4, score_threshold=[])
  %idx = take(%sel, const(Tensor[(), int64], [2]), axis=1)
  %flat = reshape(%shifted, newshape=[4, 4])
  %picked = take(%flat, %idx, axis=0)
  %neg = negative(%picked)
  %out = (%sel, %neg)
  return %out
}
)";

std::vector<Tensor> chain_inputs() {
  return {Tensor::from_floats({1, 4, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 0, 4, 1, 5}),
          Tensor::from_floats({1, 1, 4}, {0.9f, 0.8f, 0.7f, 0.95f})};
}

void expect_chain_outputs(const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].shape(), (Shape{3, 3}));
  const int64_t* sel = out[0].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(sel, sel + 9), (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 2}));
  ASSERT_EQ(out[1].shape(), (Shape{3, 4}));
  const float* neg = out[1].data<float>();
  EXPECT_EQ(std::vector<float>(neg, neg + 12),
            (std::vector<float>{-1, -5, -2, -6, -1, -1, -2, -2, -1, -3, -2, -4}));
}

TEST(DynamicDims, TextRoundTrips) {
  Module m = parse(kChain);
  std::string printed = print_module(m);
  EXPECT_NE(printed.find("-> (Tensor[(<=4, 3), int64], Tensor[(<=4, 4), float32])"), std::string::npos)
      << printed;
  EXPECT_EQ(print_module(parse(printed)), printed);
  EXPECT_TRUE(structural_equal(m, parse(printed)));
  // A bounded and a static type of one shape differ.
  Type bounded = tensor_type(TensorDesc{{4, 3}, DType::Int64, true});
  EXPECT_EQ(type_str(bounded), "Tensor[(<=4, 3), int64]");
  EXPECT_FALSE(type_equal(bounded, tensor_type({4, 3}, DType::Int64)));
}

TEST(DynamicDims, InferenceKeepsTheDynamicAxis) {
  Module m = parse(kChain);
  const FunctionNode& f = *m.find("main");
  std::map<std::string, std::string> types;
  for (const auto& b : f.bindings) types[b.var->name] = type_str(b.var->type);
  EXPECT_EQ(types["sel"], "Tensor[(<=4, 3), int64]");
  EXPECT_EQ(types["idx"], "Tensor[(<=4,), int64]");         // data dynamic, taken along axis 1
  EXPECT_EQ(types["picked"], "Tensor[(<=4, 4), float32]");  // indices dynamic, along axis 0
  EXPECT_EQ(types["neg"], "Tensor[(<=4, 4), float32]");     // elementwise follows
}

TEST(DynamicDims, OpsThatDoNotAcceptThemSaySo) {
  const std::string head =
      "def @main(%sel: Tensor[(<=6, 3), int64], %x: Tensor[(6, 3), int64]) -> Tensor[(3,), int64] {\n";
  std::string err = error_of([&] { parse(head + "  %s = sum(%sel, axis=[0])\n  return %s\n}\n"); });
  EXPECT_NE(err.find("sum: input 0 Tensor[(<=6, 3), int64] has a bounded dynamic leading axis"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("`kiln ops` marks the ops that do [dynamic]"), std::string::npos) << err;
  EXPECT_NE(err.find("test.kir:2:"), std::string::npos) << err;  // at the call
  // Elementwise with a static operand that does not broadcast along the axis.
  err = error_of([&] { parse(head + "  %s = add(%sel, %x)\n  return %s\n}\n"); });
  EXPECT_NE(err.find("must broadcast along the bounded dynamic leading axis"), std::string::npos) << err;
  // take along the dynamic axis itself, and slicing it.
  err = error_of([&] {
    parse(head + "  %s = take(%sel, const(Tensor[(3,), int64], [0, 1, 2]), axis=0)\n  return %s\n}\n");
  });
  EXPECT_NE(err.find("take: data Tensor[(<=6, 3), int64] has a bounded dynamic leading axis"),
            std::string::npos)
      << err;
  err = error_of([&] { parse(head + "  %s = strided_slice(%sel, begin=[1], end=[3])\n  return %s\n}\n"); });
  EXPECT_NE(err.find("may be sliced only whole"), std::string::npos) << err;
  err = error_of([&] { parse(head + "  %s = squeeze(%sel)\n  return %s\n}\n"); });
  EXPECT_NE(err.find("name the other size-1 axes"), std::string::npos) << err;
  err = error_of([&] { parse(head + "  %s = expand_dims(%sel, axis=0)\n  return %s\n}\n"); });
  EXPECT_NE(err.find("must stay leading"), std::string::npos) << err;
  // Slicing another axis keeps the dynamic one.
  Module ok = parse(
      "def @main(%sel: Tensor[(<=6, 3), int64]) -> Tensor[(<=6, 1), int64] {\n"
      "  %s = strided_slice(%sel, begin=[2], end=[3], axes=[1])\n  return %s\n}\n");
  EXPECT_EQ(type_str(ok.find("main")->ret_type), "Tensor[(<=6, 1), int64]");
}

TEST(DynamicDims, ChainRunsInTheInterpreter) {
  expect_chain_outputs(interpret(parse(kChain), "main", chain_inputs()));
}

TEST(DynamicDims, ChainRunsCompiledWithDynamicOpsOnReferenceKernels) {
  driver::CompileSummary sum;
  Executable exe = driver::compile_model(parse(kChain), {}, &sum);
  ASSERT_TRUE(sum.reference_ops.count("image.non_max_suppression")) << sum.str();
  EXPECT_NE(sum.reference_ops["image.non_max_suppression"].second.find("dynamic shape"), std::string::npos);
  EXPECT_EQ(sum.reference_ops["take"].first, 2) << sum.str();
  EXPECT_NE(sum.reference_ops["take"].second.find("dynamic shape"), std::string::npos) << sum.str();
  EXPECT_NE(sum.reference_ops["negative"].second.find("dynamic shape"), std::string::npos) << sum.str();
  EXPECT_GE(sum.lowered_ops, 1) << sum.str();  // the add (and reshape) before it are compiled
  VirtualMachine vm(exe);
  expect_chain_outputs(vm.run(chain_inputs()));
  VirtualMachine::RunOptions verify;
  verify.verify = true;
  RunResult checked = vm.run(chain_inputs(), verify);
  expect_chain_outputs(checked.outputs);
  for (const auto& c : checked.checks) EXPECT_TRUE(c.ok) << c.str();
}

TEST(DynamicDims, StrictCompileRefusesThem) {
  driver::CompileOptions strict;
  strict.strict_compile = true;
  std::string err = error_of([&] { driver::compile_model(parse(kChain), strict); });
  EXPECT_NE(err.find("--strict-compile"), std::string::npos) << err;
  EXPECT_NE(err.find("image.non_max_suppression x1: dynamic shape"), std::string::npos) << err;
}

TEST(DynamicDims, KmodWithADynamicOutputLoadsAndRuns) {
  Executable exe = driver::compile_model(parse(kChain), {});
  std::string path = (std::filesystem::temp_directory_path() / "kiln_dynamic_dims_test.kmod").string();
  write_kmod(path, exe);
  Executable loaded = read_kmod(path);
  std::remove(path.c_str());
  const GraphValue* sel = nullptr;
  for (const auto& n : loaded.host.nodes)
    for (const auto& o : n.outputs)
      if (o.desc.bounded_outer && o.desc.dtype == DType::Int64 && o.desc.shape.size() == 2) sel = &o;
  ASSERT_NE(sel, nullptr);
  EXPECT_EQ(desc_str(sel->desc), "Tensor[(<=4, 3), int64]");
  expect_chain_outputs(VirtualMachine(std::move(loaded)).run(chain_inputs()));
}

TEST(DynamicDims, GraphJsonRecordsTheBoundAndRefusesAMalformedOne) {
  Executable exe = driver::compile_model(parse(kChain), {});
  std::string json = graph_to_json(exe.host);
  EXPECT_NE(json.find("\"bounded\": true"), std::string::npos) << json;
  EXPECT_EQ(graph_to_json(graph_from_json(json, "host")), json);
  std::string bad = json;
  bad.replace(bad.find("\"bounded\": true"), 15, "\"bounded\": 1234");
  std::string err = error_of([&] { graph_from_json(bad, "host"); });
  EXPECT_NE(err.find("malformed kiln.graph"), std::string::npos) << err;
  EXPECT_NE(err.find("\"bounded\" must be true or false"), std::string::npos) << err;
}

TEST(DynamicDims, CApiReportsTheActualShape) {
  std::string bytes = encode_kmod(driver::compile_model(parse(kChain), {}));
  kiln_module* m = nullptr;
  ASSERT_EQ(kiln_module_load_memory(bytes.data(), bytes.size(), "chain", &m), nullptr);
  kiln_tensor_info info;
  ASSERT_EQ(kiln_module_output_info(m, 1, &info), nullptr);
  EXPECT_EQ(info.bounded_outer, 1);
  ASSERT_EQ(info.ndim, 2u);
  EXPECT_EQ(info.shape[0], 4);  // the bound
  EXPECT_EQ(info.byte_size, 4u * 4u * sizeof(float));
  kiln_run* run = nullptr;
  ASSERT_EQ(kiln_run_create(m, &run), nullptr);
  std::vector<Tensor> in = chain_inputs();
  ASSERT_EQ(kiln_run_bind_input_at(run, 0, in[0].raw(), in[0].nbytes(), KILN_FLOAT32), nullptr);
  ASSERT_EQ(kiln_run_bind_input_at(run, 1, in[1].raw(), in[1].nbytes(), KILN_FLOAT32), nullptr);
  std::vector<float> picked(16, 7.0f);
  ASSERT_EQ(kiln_run_bind_output_at(run, 1, picked.data(), picked.size() * sizeof(float), KILN_FLOAT32),
            nullptr);
  size_t ndim = 0;
  const int64_t* shape = nullptr;
  ASSERT_EQ(kiln_run_output_shape(run, 1, &ndim, &shape), nullptr);
  EXPECT_EQ(shape[0], 4);  // before a run: the module's shape
  ASSERT_EQ(kiln_run_invoke(run), nullptr);
  ASSERT_EQ(kiln_run_output_shape(run, 1, &ndim, &shape), nullptr);
  ASSERT_EQ(ndim, 2u);
  EXPECT_EQ(shape[0], 3);
  EXPECT_EQ(shape[1], 4);
  EXPECT_EQ(std::vector<float>(picked.begin(), picked.begin() + 12),
            (std::vector<float>{-1, -5, -2, -6, -1, -1, -2, -2, -1, -3, -2, -4}));
  EXPECT_EQ(picked[12], 7.0f);  // past the actual rows: untouched
  // The unbound output 0 has its shape too.
  ASSERT_EQ(kiln_run_output_shape(run, 0, &ndim, &shape), nullptr);
  EXPECT_EQ(shape[0], 3);
  kiln_run_free(run);
  kiln_module_free(m);
}

}  // namespace
}  // namespace kiln
