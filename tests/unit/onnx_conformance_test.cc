// The ONNX operator conformance suite in `make test`: every node test listed
// in tests/e2e/onnx_conformance_passing.txt must still pass on the reference
// interpreter, and through the compiled path (compile_model, then the VM).
// The list is the passing set of `kiln onnx-conformance`; a regression in an
// op, a converter or a lowering fails here. The per-operator report in
// docs/onnx_conformance.md must match a fresh run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/onnx/conformance.h"
#include "kiln/runtime/error.h"

namespace kiln {
namespace {

std::vector<std::string> passing_list() {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/tests/e2e/onnx_conformance_passing.txt");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') names.push_back(line);
  return names;
}

void expect_passing_set_passes(const ConformanceOptions& opts) {
  ASSERT_TRUE(std::filesystem::is_directory(kOnnxNodeTestDir))
      << "ONNX node tests not found at " << kOnnxNodeTestDir
      << ": install Debian's libonnx-testdata by running scripts/setup.sh";
  std::vector<std::string> names = passing_list();
  ASSERT_GT(names.size(), 100u) << "tests/e2e/onnx_conformance_passing.txt is missing or short";
  std::vector<ConformanceResult> results;
  for (const auto& name : names) {
    ConformanceResult r = run_conformance_test(std::string(kOnnxNodeTestDir) + "/" + name, opts);
    EXPECT_EQ(r.status, ConformanceResult::Status::Passed) << name << ": " << r.detail;
    results.push_back(r);
  }
  std::cout << conformance_table(results, false);
}

TEST(OnnxConformance, PassingSetStillPasses) { expect_passing_set_passes({}); }

// Every test the interpreter passes also passes compiled (default compile
// options, no backends): lowered ops against the test's expected outputs.
TEST(OnnxConformance, PassingSetPassesCompiled) {
  ConformanceOptions opts;
  opts.compiled = true;
  expect_passing_set_passes(opts);
}

// docs/onnx_conformance.md is what `kiln onnx-conformance --report` prints
// today: a converter or lowering that changes a count must regenerate it.
TEST(OnnxConformance, ReportIsCurrent) {
  ASSERT_TRUE(std::filesystem::is_directory(kOnnxNodeTestDir))
      << "ONNX node tests not found at " << kOnnxNodeTestDir
      << ": install Debian's libonnx-testdata by running scripts/setup.sh";
  ConformanceOptions compiled;
  compiled.compiled = true;
  std::string report =
      conformance_report(run_conformance(kOnnxNodeTestDir), run_conformance(kOnnxNodeTestDir, compiled));
  const std::string path = std::string(KILN_SOURCE_DIR) + "/docs/onnx_conformance.md";
  std::ifstream in(path);
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_EQ(committed.str(), report) << path << " is out of date; regenerate it with\n"
                                     << "  build/kiln onnx-conformance --report > docs/onnx_conformance.md";
}

TEST(OnnxConformance, MissingFolderIsAnError) {
  try {
    run_conformance("/nonexistent/node");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("run scripts/setup.sh"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace kiln
