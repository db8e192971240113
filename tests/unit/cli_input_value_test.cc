// `--input-value NAME=V0,V1,...` (or NAME=FILE.npy) on `kiln run` and
// `kiln compile`: an ONNX input that holds a shape (here Reshape's) is
// folded into the model as a constant; without it the error names the input
// and the flag.
#include <gtest/gtest.h>

#include "cli_util.h"
#include "kiln/runtime/npy.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

using testing::kiln_cmd;

bool has(const testing::CliResult& r, const std::string& needle) {
  return r.out.find(needle) != std::string::npos;
}

// y = reshape(x, shape) with x (2, 3) float and shape a 2-element int64 input.
std::string reshape_model() {
  onnx_test::ModelBuilder b;
  b.input("x", {2, 3});
  b.input("shape", {2}, onnx::TensorProto_DataType_INT64);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", {3, 2});
  return b.bytes();
}

class CliInputValue : public testing::CliTest {
 protected:
  CliInputValue() : CliTest("cli-input-value-test") {}
  void SetUp() override {
    CliTest::SetUp();
    model_ = file("reshape.onnx", reshape_model());
    write_npy(path("x.npy"), Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  }
  // y has shape (3, 2) and x's values in order.
  void expect_reshaped(const std::string& out) {
    Tensor y = read_npy(out + "/output_0.npy");
    EXPECT_EQ(y.shape(), (Shape{3, 2}));
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.get_as_double(i), static_cast<double>(i + 1));
  }
  std::string model_;
};

TEST_F(CliInputValue, IntegersOnRun) {
  auto r = kiln_cmd("run " + model_ + " --input-value shape=3,2 --input x=" + path("x.npy") + " --out " +
                    path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_reshaped(path("out"));
}

TEST_F(CliInputValue, NpyFileOnCompile) {
  write_npy(path("shape.npy"), Tensor::from_ints({2}, {3, -1}));
  auto c =
      kiln_cmd("compile " + model_ + " --input-value shape=" + path("shape.npy") + " -o " + path("m.kmod"));
  ASSERT_EQ(c.code, 0) << c.out;
  auto r = kiln_cmd("run " + path("m.kmod") + " --input x=" + path("x.npy") + " --out " + path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  expect_reshaped(path("out"));
}

TEST_F(CliInputValue, Errors) {
  auto missing = kiln_cmd("run " + model_ + " --input x=" + path("x.npy"));
  EXPECT_NE(missing.code, 0);
  EXPECT_TRUE(has(missing, "the graph input 'shape'")) << missing.out;
  EXPECT_TRUE(has(missing, "--input-value shape=V0,V1,...")) << missing.out;
  auto unknown = kiln_cmd("run " + model_ + " --input-value shap=3,2 --input x=" + path("x.npy"));
  EXPECT_NE(unknown.code, 0);
  EXPECT_TRUE(has(unknown, "--input-value names 'shap', which is not an input of the model")) << unknown.out;
  auto bad = kiln_cmd("run " + model_ + " --input-value shape=3,two --input x=" + path("x.npy"));
  EXPECT_NE(bad.code, 0);
  EXPECT_TRUE(has(bad, "--input-value 'shape=3,two': 'two' is not a number")) << bad.out;
}

}  // namespace
}  // namespace kiln
