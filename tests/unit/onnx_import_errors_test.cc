// The ONNX importer's error paths: malformed and truncated files, unknown
// operators (all reported at once), unsupported opsets, unbound symbolic
// dimensions, bad --input-shape flags. Each test checks the message text.
#include <gtest/gtest.h>

#include <fstream>

#include "frontend/onnx/importer.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

using onnx_test::ModelBuilder;

std::string error_of(const std::string& bytes, const ImportOptions& opts = {}) {
  try {
    import_onnx_bytes(bytes, "m.onnx", opts);
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

ModelBuilder identity_model(const std::vector<int64_t>& dims) {
  ModelBuilder b;
  b.input("x", dims);
  b.output("y", dims);
  b.node("Identity", {"x"}, {"y"}, "id0");
  return b;
}

TEST(OnnxImportErrors, EmptyFile) {
  EXPECT_NE(error_of("").find("m.onnx: the file is empty"), std::string::npos);
}

TEST(OnnxImportErrors, GarbageBytes) {
  std::string msg = error_of("this is not a protobuf \xff\xff\xff\xff");
  EXPECT_NE(msg.find("not an ONNX model (protobuf parse failed"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, TruncatedModelIsAnErrorAtEveryLength) {
  ModelBuilder b = identity_model({2, 3});
  b.initializer("w", Tensor::from_floats({4}, {1, 2, 3, 4}));
  std::string full = b.bytes();
  ASSERT_NO_THROW(import_onnx_bytes(full, "m.onnx"));
  // Every proper prefix either parses to a model that is then rejected with a
  // kiln::Error, or fails to parse: never a crash, never another exception.
  for (size_t len = 0; len < full.size(); ++len) {
    try {
      import_onnx_bytes(full.substr(0, len), "m.onnx");
    } catch (const Error&) {
    }
  }
}

TEST(OnnxImportErrors, MissingFile) {
  try {
    import_onnx("/nonexistent/model.onnx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "cannot open ONNX model '/nonexistent/model.onnx': No such file or directory");
  }
}

TEST(OnnxImportErrors, NoGraph) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  EXPECT_NE(error_of(m.SerializeAsString()).find("has no graph"), std::string::npos);
}

// Older opsets are converted (tests/unit/onnx_opset_test.cc); one newer than
// the installed ONNX library knows cannot be.
TEST(OnnxImportErrors, UnsupportedOpset) {
  ModelBuilder b(99);
  b.input("x", {2});
  b.output("y", {2});
  b.node("Identity", {"x"}, {"y"});
  std::string msg = error_of(b.bytes());
  EXPECT_NE(msg.find("the model uses opset 99; kiln imports opsets 7 to 18 and converts opsets 1 to "),
            std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, UnknownOperatorsAreAllListed) {
  ModelBuilder b;
  b.input("x", {2});
  b.output("z", {2});
  b.node("FancyOp", {"x"}, {"a"}, "first_fancy");
  b.node("Identity", {"a"}, {"b"});
  b.node("OtherOp", {"b"}, {"c"}, "the_other");
  auto* custom = b.node("CustomThing", {"c"}, {"z"}, "custom0");
  custom->set_domain("com.example");
  auto* o = b.model.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  std::string msg;
  try {
    import_onnx_bytes(b.bytes(), "m.onnx");
  } catch (const UnsupportedError& e) {
    msg = e.message();
  }
  EXPECT_NE(msg.find("3 unsupported node(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FancyOp (opset 13) node 'first_fancy': no converter for this operator"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("OtherOp (opset 13) node 'the_other'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("com.example.CustomThing (opset 1) node 'custom0': operator domain 'com.example' is "
                     "not supported"),
            std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, CheckerRejectsUndefinedInput) {
  ModelBuilder b;
  b.input("x", {2});
  b.output("y", {2});
  b.node("Identity", {"nowhere"}, {"y"}, "bad");
  std::string msg = error_of(b.bytes());
  EXPECT_NE(msg.find("not a valid ONNX model (ONNX checker)"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, UnboundSymbolicDimension) {
  std::string msg = error_of(identity_model({-1, 3, -1}).bytes());
  EXPECT_NE(msg.find("input(s) with symbolic dimensions must be bound"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x (N0, 3, N2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--input-shape x="), std::string::npos) << msg;
}

TEST(OnnxImportErrors, BoundSymbolicDimension) {
  ImportOptions opts;
  parse_input_shape_flag("x=4,3,5", opts);
  Module m = import_onnx_bytes(identity_model({-1, 3, -1}).bytes(), "m.onnx", opts);
  ASSERT_EQ(m.functions.size(), 1u);
  EXPECT_EQ(m.functions[0]->params[0]->type->tensor.shape, (Shape{4, 3, 5}));
}

TEST(OnnxImportErrors, InputShapeMismatch) {
  ImportOptions opts;
  parse_input_shape_flag("x=4,2,5", opts);
  std::string msg = error_of(identity_model({-1, 3, -1}).bytes(), opts);
  EXPECT_NE(msg.find("--input-shape x=(4, 2, 5) does not match the model's (N0, 3, N2)"), std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, InputShapeForUnknownInput) {
  ImportOptions opts;
  parse_input_shape_flag("image=1,3", opts);
  std::string msg = error_of(identity_model({2, 3}).bytes(), opts);
  EXPECT_NE(msg.find("--input-shape names 'image', which is not an input of the model (inputs: x)"),
            std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, InputShapeFlagSyntax) {
  ImportOptions opts;
  EXPECT_THROW(parse_input_shape_flag("x", opts), Error);
  try {
    parse_input_shape_flag("x=1,a,3", opts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "--input-shape 'x=1,a,3': 'a' is not a non-negative dimension");
  }
  EXPECT_THROW(parse_input_shape_flag("x=1,-2", opts), Error);
  parse_input_shape_flag("x=1,3,320,320", opts);
  EXPECT_EQ(opts.input_shapes.at("x"), (Shape{1, 3, 320, 320}));
}

TEST(OnnxImportErrors, UnsupportedElementType) {
  ModelBuilder b;
  b.input("x", {2}, onnx::TensorProto_DataType_COMPLEX64);
  b.output("y", {2}, onnx::TensorProto_DataType_COMPLEX64);
  b.node("Identity", {"x"}, {"y"});
  std::string msg = error_of(b.bytes());
  EXPECT_NE(msg.find("graph input 'x' has element type COMPLEX64, which kiln does not support"),
            std::string::npos)
      << msg;
}

TEST(OnnxImportErrors, InitializerWithWrongByteCount) {
  ModelBuilder b = identity_model({2});
  auto* init = b.graph().add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto_DataType_FLOAT);
  init->add_dims(3);
  init->set_raw_data(std::string(8, '\0'));
  std::string msg = error_of(b.bytes());
  // ONNX's checker or kiln's decoder reports it; either names the tensor.
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
}

// An empty constant (a 0 dimension) may not hide a dimension beyond 2^48:
// its other axes' strides would overflow, and kiln's own .kir parser
// refuses the printed module (a libFuzzer finding). Nor may an op's result.
TEST(OnnxImportErrors, HugeDimensionOfAnEmptyTensor) {
  ModelBuilder b;
  b.output("w", {0, -1});
  auto* init = b.graph().add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto_DataType_FLOAT);
  init->add_dims(0);
  init->add_dims(int64_t{1} << 60);
  std::string msg = error_of(b.bytes());
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("more than kiln's limit of 2^48"), std::string::npos) << msg;

  ModelBuilder fill;
  fill.output("y", {0, -1});
  fill.initializer("shape", Tensor::from_ints({2}, {0, int64_t{1} << 50}));
  fill.node("ConstantOfShape", {"shape"}, {"y"});
  std::string fill_msg = error_of(fill.bytes());
  EXPECT_NE(fill_msg.find("more than kiln's limit of 2^48"), std::string::npos) << fill_msg;
}

TEST(OnnxImportErrors, InitializersBecomeConstants) {
  ModelBuilder b;
  b.output("big", {20});
  b.output("small", {2});
  std::vector<float> v(20);
  for (int i = 0; i < 20; ++i) v[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i);
  b.initializer("big", Tensor::from_floats({20}, v));
  b.initializer("small", Tensor::from_floats({2}, {7, 8}));
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  const auto* tuple = as<TupleNode>(m.functions[0]->result);
  ASSERT_NE(tuple, nullptr);
  const auto* big = as<ConstantNode>(tuple->fields[0]);
  const auto* small = as<ConstantNode>(tuple->fields[1]);
  ASSERT_TRUE(big && small);
  EXPECT_EQ(big->name, "big");  // named: goes to the side file
  EXPECT_EQ(small->name, "");   // inline
  EXPECT_FLOAT_EQ(big->value.data<float>()[19], 9.5f);
  EXPECT_FLOAT_EQ(small->value.data<float>()[1], 8.0f);
}

TEST(OnnxImportErrors, TensorFileErrors) {
  std::string path = std::string(KILN_BINARY_DIR) + "/onnx_bad_tensor.pb";
  std::ofstream(path) << "\xff\xff garbage";
  try {
    onnx_import::read_tensor_file(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("is not a serialized ONNX TensorProto"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace kiln
