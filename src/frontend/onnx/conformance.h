// The ONNX operator conformance runner: runs the ONNX backend node tests (the
// data/node/*/ folders of Debian's libonnx-testdata: model.onnx plus
// test_data_set_*/input_*.pb and output_*.pb) on kiln's reference
// interpreter and classifies each test as passed, failed (with the max
// error or the error message) or unsupported (with the operator or reason).
#pragma once

#include <string>

#include "kiln/runtime/error.h"
#include <vector>

namespace kiln {

// Where Debian's libonnx-testdata puts the node tests.
inline constexpr const char* kOnnxNodeTestDir = "/usr/share/libonnx-testdata/data/node";

struct ConformanceOptions {
  // Only tests whose folder name contains this (empty: all).
  std::string filter;
  // A float output element matches when |got - want| <= atol + rtol * |want|.
  double rtol = 1e-3;
  double atol = 1e-5;
};

struct ConformanceResult {
  enum class Status { Passed, Failed, Unsupported };
  std::string name;     // the test folder, e.g. "test_conv_with_strides_padding"
  Status status = Status::Failed;
  std::string ops;      // the ONNX operators the model uses, comma-separated
  double max_error = 0; // largest absolute difference over all outputs
  std::string detail;   // failed: what differed or the error; unsupported: why
  // Inputs carrying shapes/axes/scales were frozen to the test's values.
  bool frozen_inputs = false;
};

// Runs every test folder under `node_dir` (sorted by name). Throws
// kiln::Error when the folder does not exist.
std::vector<ConformanceResult> run_conformance(const std::string& node_dir, const ConformanceOptions& opts = {});

// One test folder.
ConformanceResult run_conformance_test(const std::string& test_dir, const ConformanceOptions& opts = {});

// The table: one line per test, then totals per status.
std::string conformance_table(const std::vector<ConformanceResult>& results, bool show_passed = true);

const char* status_name(ConformanceResult::Status s);

}  // namespace kiln
