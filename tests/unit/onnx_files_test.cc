// The ONNX importer and the files around a model: subgraphs nested deeper
// than protobuf reads, external data read within the file size limit, and
// what `kiln import` writes read back by kiln's own parser.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "frontend/onnx/importer.h"
#include "ir/text.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

fs::path scratch(const std::string& name) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "onnx-files-test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A graph whose one node is an If nested `depth` levels deep.
void nested_if(onnx::GraphProto& g, int depth) {
  g.set_name("level" + std::to_string(depth));
  onnx_test::add_value_info(g.add_output(), "y", onnx::TensorProto_DataType_FLOAT, {2});
  auto* n = g.add_node();
  n->add_output("y");
  if (depth == 0) {
    n->set_op_type("Identity");
    n->add_input("x");
    return;
  }
  n->set_op_type("If");
  n->add_input("c");
  auto* then_branch = n->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto_AttributeType_GRAPH);
  nested_if(*then_branch->mutable_g(), depth - 1);
  auto* else_branch = n->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto_AttributeType_GRAPH);
  nested_if(*else_branch->mutable_g(), 0);
}

std::string nested_if_model(int depth) {
  onnx_test::ModelBuilder b;
  b.input("x", {2});
  b.input("c", {}, onnx::TensorProto_DataType_BOOL);
  auto* n = b.node("Identity", {"x"}, {"x1"});
  (void)n;
  onnx::GraphProto g;
  nested_if(g, depth);
  // The top level is the model's graph itself.
  *b.graph().add_node() = g.node(0);
  b.output("y", {2});
  return b.bytes();
}

TEST(OnnxFiles, SubgraphsNestedTooDeepForProtobufAreNamed) {
  std::string deep = nested_if_model(120);
  std::string msg = error_of([&] { import_onnx_bytes(deep, "deep.onnx"); });
  EXPECT_NE(msg.find("deep.onnx: the model nests subgraphs (If, Loop or Scan bodies) deeper than protobuf's "
                     "limit of 100 nested messages"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("protobuf parse failed"), std::string::npos) << msg;
  // Garbage is still garbage.
  std::string junk = error_of([&] { import_onnx_bytes("\x0a\xff\xff\xff\xff\x0f", "junk.onnx"); });
  EXPECT_NE(junk.find("junk.onnx: not an ONNX model (protobuf parse failed"), std::string::npos) << junk;
}

// A 2-element float32 initializer "w" stored in `location`.
std::string external_model(const std::string& location) {
  onnx_test::ModelBuilder b;
  b.input("x", {2});
  auto* w = b.graph().add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto_DataType_FLOAT);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  b.node("Add", {"x", "w"}, {"y"});
  b.output("y", {2});
  return b.bytes();
}

TEST(OnnxFiles, ExternalDataIsReadWithinTheFileSizeLimit) {
  fs::path dir = scratch("external");
  {
    std::ofstream out(dir / "w.bin", std::ios::binary);
    float w[2] = {1.5f, -2.0f};
    out.write(reinterpret_cast<const char*>(w), sizeof w);
  }
  fs::create_symlink("/dev/zero", dir / "zero.bin");
  Module ok = import_onnx_bytes(external_model("w.bin"), "m.onnx", {}, dir.string());
  EXPECT_NE(print_module(ok).find("1.5"), std::string::npos) << print_module(ok);
  // A device never ends: refused before a byte is read.
  std::string zero =
      error_of([&] { import_onnx_bytes(external_model("zero.bin"), "m.onnx", {}, dir.string()); });
  EXPECT_NE(zero.find("tensor 'w': " + (dir / "zero.bin").string() + ": not a regular file"),
            std::string::npos)
      << zero;
  setenv("KILN_MAX_FILE_BYTES", "4", 1);
  std::string big = error_of([&] { import_onnx_bytes(external_model("w.bin"), "m.onnx", {}, dir.string()); });
  unsetenv("KILN_MAX_FILE_BYTES");
  EXPECT_NE(big.find("tensor 'w': " + (dir / "w.bin").string() +
                     ": 8 bytes, larger than the limit of 4 bytes (set KILN_MAX_FILE_BYTES to raise it)"),
            std::string::npos)
      << big;
}

// What `kiln import` writes (the .kir and its side file) parses back with
// kiln's parser; `kiln import -o -` (every constant inline) is checked in
// cli_streams_test.cc, and the ONNX fuzz target checks both on every input
// that imports.
TEST(OnnxFiles, ImportedModulesParseBack) {
  const std::string nodes = "/usr/share/libonnx-testdata/data/node/";
  fs::path dir = scratch("round-trip");
  for (const char* test :
       {"test_conv_with_strides_padding", "test_gemm_default_no_bias", "test_batchnorm_example",
        "test_gather_0", "test_maxpool_2d_pads", "test_softmax_axis_1", "test_matmul_2d",
        "test_transpose_default", "test_concat_1d_axis_0", "test_averagepool_2d_pads", "test_clip",
        "test_constant"}) {
    SCOPED_TRACE(test);
    Module m = import_onnx(nodes + test + "/model.onnx");
    std::string text = print_module(m);
    std::string kir = (dir / (std::string(test) + ".kir")).string();
    save_module(m, kir, 4);  // a low inline limit: the side file is used too
    Module back;
    ASSERT_NO_THROW(back = load_module(kir)) << error_of([&] { load_module(kir); }) << "\n" << text;
    // Saved and loaded again, the text is the same: nothing is lost on the way.
    std::string again = (dir / (std::string(test) + ".again.kir")).string();
    save_module(back, again, 4);
    EXPECT_EQ(print_module(load_module(again)), print_module(back)) << text;
  }
}

}  // namespace
}  // namespace kiln
