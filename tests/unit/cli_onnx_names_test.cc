// ONNX names are the interface (runtime/model_names.h): `kiln run`,
// `compile`, `partition` and `inspect` take and show the model's own input
// and output names, whatever kiln's IR calls them; outputs are written under
// those names too, with an index (outputs.json) that never lets two outputs
// share a file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "ir/model_names.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"
#include "onnx_test_util.h"
#include "runtime/model_names.h"

namespace kiln {
namespace {

using Result = testing::CliResult;
using testing::kiln_cmd;

bool has(const Result& r, const std::string& needle) { return r.out.find(needle) != std::string::npos; }

std::vector<float> floats(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.get_as_double(i)));
  return v;
}

// y1 = a + b, y2 = a * b, y3 = y1 - c, for inputs named as exporters name
// them: "onnx::Add_0" (PyTorch), "input.1" (a dot), "x/in" (a scope path)
// and "0" (all digits). Outputs "19", "add/out:0" and "out::y".
std::string names_model() {
  onnx_test::ModelBuilder b;
  b.input("onnx::Add_0", {2, 3});
  b.input("input.1", {2, 3});
  b.input("x/in", {2, 3});
  b.input("0", {2, 3});
  b.node("Add", {"onnx::Add_0", "input.1"}, {"19"});
  b.node("Mul", {"x/in", "0"}, {"add/out:0"});
  b.node("Sub", {"19", "0"}, {"out::y"});
  b.output("19", {2, 3});
  b.output("add/out:0", {2, 3});
  b.output("out::y", {2, 3});
  return b.bytes();
}

class CliOnnxNames : public testing::CliTest {
 protected:
  CliOnnxNames() : CliTest("cli-onnx-names-test") {}

  std::string npy(const std::string& name, const Tensor& t) {
    write_npy(path(name), t);
    return path(name);
  }
  // --input flags by the four ONNX names, with a, b, c, d as values.
  std::string inputs() {
    return " --input onnx::Add_0=" + npy("a.npy", Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6})) +
           " --input input.1=" + npy("b.npy", Tensor::from_floats({2, 3}, {10, 20, 30, 40, 50, 60})) +
           " --input x/in=" + npy("c.npy", Tensor::from_floats({2, 3}, {2, 2, 2, 3, 3, 3})) +
           " --input 0=" + npy("d.npy", Tensor::from_floats({2, 3}, {1, 0, -1, 1, 0, -1}));
  }
  // The known answers of names_model() for inputs().
  void expect_outputs(const std::string& out) {
    const std::vector<float> sum{11, 22, 33, 44, 55, 66}, product{2, 0, -2, 3, 0, -3},
        difference{10, 22, 34, 43, 55, 67};
    EXPECT_EQ(floats(read_npy(out + "/output_0.npy")), sum);
    EXPECT_EQ(floats(read_npy(out + "/output_1.npy")), product);
    EXPECT_EQ(floats(read_npy(out + "/output_2.npy")), difference);
    // Also under the ONNX names, made safe for file names.
    EXPECT_EQ(floats(read_npy(out + "/19.npy")), sum);
    EXPECT_EQ(floats(read_npy(out + "/add_out_0.npy")), product);
    EXPECT_EQ(floats(read_npy(out + "/out__y.npy")), difference);
    nlohmann::json index = nlohmann::json::parse(testing::read_text(out + "/outputs.json"));
    ASSERT_EQ(index["outputs"].size(), 3u) << index.dump();
    EXPECT_EQ(index["outputs"][1]["index"], 1);
    EXPECT_EQ(index["outputs"][1]["name"], "add/out:0");
    EXPECT_EQ(index["outputs"][1]["file"], "add_out_0.npy");
    EXPECT_EQ(index["outputs"][1]["index_file"], "output_1.npy");
    EXPECT_EQ(index["outputs"][1]["shape"], nlohmann::json::parse("[2, 3]"));
  }
};

TEST_F(CliOnnxNames, RunTakesTheModelsInputNamesAndWritesItsOutputNames) {
  std::string model = file("m.onnx", names_model());
  Result r = kiln_cmd("run " + model + inputs() + " -o " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "output_0 \"19\": (2, 3) float32")) << r.out;
  EXPECT_TRUE(has(r, "output_1 \"add/out:0\": (2, 3) float32")) << r.out;
  EXPECT_TRUE(has(r, "output_2 \"out::y\": (2, 3) float32")) << r.out;
  expect_outputs(path("out"));
  // The reference interpreter gives the same answers.
  Result ref = kiln_cmd("run " + model + inputs() + " --interpret -o " + path("ref"));
  ASSERT_EQ(ref.code, 0) << ref.out;
  expect_outputs(path("ref"));
}

TEST_F(CliOnnxNames, KilnNamesKeepWorking) {
  std::string model = file("m.onnx", names_model());
  std::string a = npy("a.npy", Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  // %onnx__Add_0, input_1, x_in and %v0 are the parameters kiln made.
  Result r = kiln_cmd("run " + model + " --input %onnx__Add_0=" + a + " --input input_1=" + a +
                      " --input x_in=" + a + " --input %v0=" + a);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "[2, 4, 6, 8, 10, 12]")) << r.out;
  // Both names of one input is one input given twice.
  Result twice = kiln_cmd("run " + model + " --input 0=" + a + " --input %v0=" + a + " --random-inputs 1");
  EXPECT_EQ(twice.code, 1) << twice.out;
  EXPECT_TRUE(has(twice, "error: --input 0 and --input %v0 name the same input 0 (%v0); give it once"))
      << twice.out;
}

TEST_F(CliOnnxNames, AnUnknownNameListsTheModelsInputNames) {
  std::string model = file("m.onnx", names_model());
  std::string a = npy("a.npy", Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  Result r = kiln_cmd("run " + model + " --input onnx::Flatten_0=" + a + " --random-inputs 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r,
                  "error: --input onnx::Flatten_0: @main has no input of that name (inputs: onnx::Add_0 "
                  "(%onnx__Add_0), input.1 (%input_1), x/in (%x_in), 0 (%v0)); name an input as the model "
                  "does or as %NAME"))
      << r.out;
  EXPECT_FALSE(has(r, "compile:")) << "checked before compiling\n" << r.out;
  // A missing input is named as the model names it, with the flag to give.
  Result missing = kiln_cmd("run " + model + " --input onnx::Add_0=" + a);
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_TRUE(has(missing,
                  "error: no value for input input.1 (%input_1) Tensor[(2, 3), float32]: give --input "
                  "input.1=FILE.npy or --random-inputs SEED"))
      << missing.out;
}

TEST_F(CliOnnxNames, CompiledModuleKeepsTheNames) {
  std::string model = file("m.onnx", names_model());
  Result c = kiln_cmd("compile " + model + " -o " + path("m.kmod"));
  ASSERT_EQ(c.code, 0) << c.out;
  Result r = kiln_cmd("run " + path("m.kmod") + inputs() + " -o " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "output_2 \"out::y\"")) << r.out;
  expect_outputs(path("out"));
  Result bad = kiln_cmd("run " + path("m.kmod") + " --input nope=" + path("a.npy"));
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_TRUE(has(bad, "inputs: onnx::Add_0 (%onnx__Add_0), input.1 (%input_1)")) << bad.out;
}

TEST_F(CliOnnxNames, InspectShowsTheMapping) {
  std::string model = file("m.onnx", names_model());
  ASSERT_EQ(kiln_cmd("import " + model + " -o " + path("m.kir")).code, 0);
  ASSERT_EQ(kiln_cmd("compile " + model + " -o " + path("m.kmod")).code, 0);
  for (const std::string& f : {model, path("m.kir"), path("m.kmod")}) {
    Result r = kiln_cmd("inspect " + f);
    ASSERT_EQ(r.code, 0) << f << "\n" << r.out;
    EXPECT_TRUE(has(r, "inputs (model name -> kiln parameter):\n")) << f << "\n" << r.out;
    EXPECT_TRUE(has(r, "  \"onnx::Add_0\" -> %onnx__Add_0\n")) << f << "\n" << r.out;
    EXPECT_TRUE(has(r, "  \"0\" -> %v0\n")) << f << "\n" << r.out;
    EXPECT_TRUE(has(r, "  1 -> \"add/out:0\" -> add_out_0.npy\n")) << f << "\n" << r.out;
  }
  // The .kir text keeps them as module attributes, and runs by them.
  std::string text = testing::read_text(path("m.kir"));
  EXPECT_NE(text.find("\"onnx.input.v0\" = \"0\""), std::string::npos) << text;
  Result r = kiln_cmd("run " + path("m.kir") + inputs() + " -o " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_outputs(path("out"));
}

TEST_F(CliOnnxNames, NamesThatSanitiseAlikeGetTheirOwnFiles) {
  // "a/b" and "a:b" are both a_b; "output_1" is output 0's name but the
  // index file of output 1; "A_B" differs from a_b only by case.
  onnx_test::ModelBuilder b;
  b.input("x", {2});
  b.node("Relu", {"x"}, {"a/b"});
  b.node("Neg", {"x"}, {"a:b"});
  b.node("Abs", {"x"}, {"output_1"});
  b.node("Identity", {"x"}, {"A_B"});
  for (const char* out : {"output_1", "a/b", "a:b", "A_B"}) b.output(out, {2});
  std::string model = file("m.onnx", b.bytes());
  std::string x = npy("x.npy", Tensor::from_floats({2}, {-1, 2}));
  Result r = kiln_cmd("run " + model + " --input x=" + x + " -o " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json index = nlohmann::json::parse(testing::read_text(path("out/outputs.json")));
  std::vector<std::vector<float>> want{{1, 2}, {0, 2}, {1, -2}, {-1, 2}};
  std::set<std::string> files;
  for (size_t i = 0; i < want.size(); ++i) {
    std::string f = index["outputs"][i]["file"];
    EXPECT_TRUE(files.insert(f).second) << f << " twice: " << index.dump();
    EXPECT_EQ(floats(read_npy(path("out/" + f))), want[i]) << f;
    EXPECT_EQ(floats(read_npy(path("out/output_" + std::to_string(i) + ".npy"))), want[i]) << i;
  }
  EXPECT_EQ(index["outputs"][0]["file"], "output_1_0.npy");
  EXPECT_EQ(index["outputs"][1]["file"], "a_b.npy");
  EXPECT_EQ(index["outputs"][2]["file"], "a_b_2.npy");
  EXPECT_EQ(index["outputs"][3]["file"], "A_B_3.npy");
}

TEST_F(CliOnnxNames, InputShapeByEitherName) {
  onnx_test::ModelBuilder b;
  b.input("onnx::Relu_0", {-1, 3});
  b.input("1", {-1, 3});
  b.node("Add", {"onnx::Relu_0", "1"}, {"y"});
  b.output("y", {-1, 3});
  std::string model = file("m.onnx", b.bytes());
  std::string x = npy("x.npy", Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  Result r = kiln_cmd("run " + model + " --input-shape onnx::Relu_0=2,3 --input-shape %v1=2,3 --input " +
                      "onnx::Relu_0=" + x + " --input 1=" + x);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "output_0 \"y\": (2, 3) float32")) << r.out;
  EXPECT_TRUE(has(r, "[2, 4, 6, 8, 10, 12]")) << r.out;
  Result c = kiln_cmd("compile " + model + " --input-shape onnx__Relu_0=2,3 --input-shape 1=2,3 -o " +
                      path("m.kmod"));
  EXPECT_EQ(c.code, 0) << c.out;
  Result p =
      kiln_cmd("partition " + model +
               " -b example_npu --input-shape onnx::Relu_0=2,3 --input-shape 1=2,3 -o " + path("p.kir"));
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(testing::read_text(path("p.kir")).find("\"onnx.input.v1\" = \"1\""), std::string::npos);
  Result bad = kiln_cmd("compile " + model + " --input-shape onnx::Relu=2,3 -o " + path("m.kmod"));
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_TRUE(has(bad,
                  "--input-shape names 'onnx::Relu', which is not an input of the model (inputs: "
                  "onnx::Relu_0 (%onnx__Relu_0), 1 (%v1)); use the model's input names"))
      << bad.out;
}

TEST_F(CliOnnxNames, AnInputNameMayHoldAnEqualsSign) {
  onnx_test::ModelBuilder b;
  b.input("k=v", {2});
  b.node("Neg", {"k=v"}, {"y"});
  b.output("y", {2});
  std::string model = file("m.onnx", b.bytes());
  std::string x = npy("x.npy", Tensor::from_floats({2}, {1, -2}));
  Result r = kiln_cmd("run " + model + " --input k=v=" + x);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "[-1, 2]")) << r.out;
}

TEST(ModelNames, FileStemsAreSafe) {
  EXPECT_EQ(file_stem("onnx::Flatten_0"), "onnx__Flatten_0");
  EXPECT_EQ(file_stem("a/b.c"), "a_b.c");
  EXPECT_EQ(file_stem("19"), "19");
  EXPECT_EQ(file_stem(".."), "_..");
  EXPECT_EQ(file_stem("-rf"), "_-rf");
  EXPECT_EQ(file_stem(""), "_");
  EXPECT_EQ(file_stem("caf\xc3\xa9 x"), "caf___x");
  EXPECT_EQ(file_stem(std::string(300, 'a')).size(), 200u);
}

TEST(ModelNames, KeptInTheModuleText) {
  Module m = parse_module(R"(def @main(%v0: Tensor[(2,), float32]) -> Tensor[(2,), float32] {
  %y = negative(%v0)
  return %y
}
)",
                          "t.kir");
  ModelNames names;
  names.inputs["v0"] = "0";
  names.outputs = {"out::y"};
  set_model_names(m, names);
  Module back = parse_module(print_module(m), "t.kir");
  EXPECT_EQ(model_names(back), names);
  // A hand-edited name of no parameter is an error that says what to do.
  Module bad = back;
  bad.attrs.set("onnx.input.w", std::string("w"));
  try {
    model_names(bad);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("names %w, which is not a parameter of @main"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace kiln
