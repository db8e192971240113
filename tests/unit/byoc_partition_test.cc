// Partitioning end to end: the bundled CNN and a model with unsupported ops
// in the middle partition without cycles, run on the VM with the example NPU
// and match the reference interpreter; --explain has a reason for every host
// op; strict mode lists the ops; the report, DOT and pass options work.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "runtime/vm.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// The example NPU alone (an empty list would let every registered backend claim).
PartitionOptions example_npu_only() {
  PartitionOptions o;
  o.backends = {"example_npu"};
  return o;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Random values for every named constant the text references (variances
// positive), so the bundled model runs without its weights file.
ConstantStore random_side(const std::string& text, uint32_t seed) {
  ConstantStore side;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  std::regex re(R"re(const\(Tensor\[\(([0-9, ]*)\), float32\], "([^"]+)"\))re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    Shape shape;
    std::stringstream dims((*it)[1].str());
    std::string d;
    while (std::getline(dims, d, ','))
      if (d.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(d));
    std::string name = (*it)[2].str();
    std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
    for (auto& x : v) x = name.find("var") != std::string::npos ? 0.5f + std::fabs(dist(rng)) : dist(rng);
    side[name] = Tensor::from_floats(shape, v);
  }
  return side;
}

Tensor random_input(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_floats(shape, v);
}

void expect_matches_reference(const Module& m, const Module& parted, const std::vector<Tensor>& inputs) {
  VirtualMachine vm(build_executable(parted));
  VirtualMachine::RunOptions ro;
  ro.verify = true;
  RunResult run = vm.run(inputs, ro);
  const std::vector<Tensor>& got = run.outputs;
  std::vector<Tensor> want = interpret(m, "main", inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k)
    for (int64_t i = 0; i < want[k].numel(); ++i)
      ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i),
                  1e-5 * (1 + std::fabs(want[k].get_as_double(i))));
  for (const auto& c : run.checks) EXPECT_TRUE(c.ok) << c.str();
}

TEST(ByocPartition, BundledCnnPartitionsRunsAndMatches) {
  std::string text = read_text(std::string(KILN_SOURCE_DIR) + "/examples/small_cnn/small_cnn.kir");
  ConstantStore side = random_side(text, 3);
  Module m = parse_module(text, "small_cnn.kir", &side);
  PartitionReport report;
  PartitionOptions opts;
  opts.backends = {"example_npu"};
  Module parted = partition_module(m, opts, true, &report);
  verify_module(parted);
  // adaptive_avg_pool2d and flatten have no pattern: they split the model.
  EXPECT_EQ(report.find("main", "g")->reason, "no pattern matched");
  EXPECT_EQ(report.find("main", "f")->reason, "no pattern matched");
  EXPECT_EQ(report.find("main", "c2")->pattern, "example_npu.conv2d_relu_fused");
  EXPECT_EQ(report.offloaded_count(), 10);
  EXPECT_EQ(report.region_count(), 2);
  for (const auto& d : report.ops) EXPECT_TRUE(d.offloaded() || !d.reason.empty()) << d.var;
  expect_matches_reference(m, parted, {random_input({1, 3, 32, 32}, 9)});
  // The same model without merging: one region per match, same values.
  PartitionReport per_match;
  Module unmerged = partition_module(m, opts, false, &per_match);
  EXPECT_GT(per_match.region_count(), report.region_count());
  expect_matches_reference(m, unmerged, {random_input({1, 3, 32, 32}, 9)});
}

const char* kMiddleFallback = R"(
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %c = nn.conv2d(%x, %w, padding=[1, 1])
  %r = nn.relu(%c)
  %e = exp(%r)
  %l = log(%e)
  %a = add(%r, %l)
  %m = multiply(%a, %c)
  return %m
}
)";

TEST(ByocPartition, UnsupportedOpsInTheMiddleStayOnTheHostWithoutCycles) {
  Module m = parse_module(kMiddleFallback, "middle.kir");
  PartitionReport report;
  Module parted = partition_module(m, example_npu_only(), true, &report);
  verify_module(parted);
  // %c feeds %m directly and, through exp/log on the host, %a -> %m: the
  // conv and the add/multiply cannot be one region.
  EXPECT_EQ(report.find("main", "e")->reason, "no pattern matched");
  EXPECT_EQ(report.find("main", "l")->reason, "no pattern matched");
  EXPECT_EQ(report.region_count(), 2);
  // %c is used outside conv+relu, so the fused pattern is refused for it.
  EXPECT_EQ(report.find("main", "c")->pattern, "example_npu.conv2d");
  bool noted = false;
  for (const auto& d : report.ops)
    for (const auto& n : d.notes)
      noted = noted || n.find("refused: would create a cycle") != std::string::npos;
  EXPECT_TRUE(noted) << report.explain();
  std::string explain = report.explain();
  EXPECT_NE(explain.find("@main %e = exp: host: no pattern matched"), std::string::npos) << explain;
  expect_matches_reference(m, parted, {random_input({1, 4, 8, 8}, 1), random_input({4, 4, 3, 3}, 2)});
}

TEST(ByocPartition, StrictModeListsTheOps) {
  Module m = parse_module(kMiddleFallback, "middle.kir");
  PartitionOptions opts;
  opts.backends = {"example_npu"};
  opts.strict = true;
  try {
    partition_module(m, opts, true, nullptr);
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("strict partitioning: 2 op(s) of @main would fall back to the host:"),
              std::string::npos);
    EXPECT_NE(msg.find("%e = exp: no pattern matched"), std::string::npos) << msg;
    EXPECT_NE(msg.find("%l = log: no pattern matched"), std::string::npos) << msg;
  }
}

TEST(ByocPartition, ReportJsonAndDot) {
  Module m = parse_module(kMiddleFallback, "middle.kir");
  PartitionReport report;
  partition_module(m, example_npu_only(), true, &report);
  std::string json = report.to_json();
  EXPECT_NE(json.find("\"summary\": \"4 of 6 ops offloaded in 2 regions (example_npu: 4); 2 on the host\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"reason\": \"no pattern matched\""), std::string::npos);
  std::string dot = report.to_dot(m);
  EXPECT_NE(dot.find("subgraph cluster_main_0"), std::string::npos) << dot;
  EXPECT_NE(dot.find("fillcolor=lightblue"), std::string::npos);
  EXPECT_NE(dot.find("\"main_e\" [label=\"%e\\nexp\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"main_r\" -> \"main_e\""), std::string::npos);
}

TEST(ByocPartition, PassOptionsByName) {
  Module m = parse_module(kMiddleFallback, "middle.kir");
  EXPECT_NO_THROW(run_passes(m, {"fuse-ops-by-pattern{backends=example_npu annotate-codegen=0}",
                                 "merge-composite-functions", "run-codegen"}));
  auto message = [&](const std::vector<std::string>& passes) {
    try {
      run_passes(m, passes);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message({"fuse-ops-by-pattern{colour=blue}"}).find("unknown partition option 'colour'"),
            std::string::npos);
  EXPECT_NE(message({"fuse-ops-by-pattern{strict}"}).find("option 'strict' must be key=value"),
            std::string::npos);
  EXPECT_NE(message({"dead-code-elimination{x=1}"}).find("pass 'dead-code-elimination' takes no options"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
