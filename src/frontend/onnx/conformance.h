// The ONNX operator conformance runner: runs the ONNX backend node tests (the
// data/node/*/ folders of Debian's libonnx-testdata: model.onnx plus
// test_data_set_*/input_*.pb and output_*.pb) on kiln's reference
// interpreter, or compiled (driver::compile_model, no backends) and run on
// the VM, and classifies each test as passed, failed (with the max error or
// the error message) or unsupported (with the operator or reason).
#pragma once

#include <string>
#include <vector>

#include "kiln/runtime/error.h"

namespace kiln {

// Where Debian's libonnx-testdata puts the node tests.
inline constexpr const char* kOnnxNodeTestDir = "/usr/share/libonnx-testdata/data/node";

struct ConformanceOptions {
  // Only tests whose folder name contains this (empty: all).
  std::string filter;
  // A float output element matches when |got - want| <= atol + rtol * |want|.
  double rtol = 1e-3;
  double atol = 1e-5;
  // Compile the imported model (default compile options, no backends) and
  // run it on the VM instead of the reference interpreter; outputs are
  // compared the same way. The compiled kernels check their indices and
  // integer divisors (CompileOptions::check_bounds).
  bool compiled = false;
};

struct ConformanceResult {
  enum class Status { Passed, Failed, Unsupported };
  std::string name;  // the test folder, e.g. "test_conv_with_strides_padding"
  Status status = Status::Failed;
  std::string ops;       // the ONNX operators the model uses, comma-separated
  double max_error = 0;  // largest absolute difference over all outputs
  std::string detail;    // failed: what differed or the error; unsupported: why
  // Inputs carrying shapes/axes/scales were frozen to the test's values.
  bool frozen_inputs = false;
  // Compiled mode: the compile summary line (what was lowered, what stayed
  // on reference kernels) and, when outputs differ, the first compiled host
  // kernel that diverges from its reference kernels (empty: none does).
  std::string compile_summary;
  int reference_op_count = 0;  // op nodes left on reference kernels
  std::string first_divergent_kernel;
};

// Runs every test folder under `node_dir` (sorted by name). Throws
// kiln::Error when the folder does not exist.
std::vector<ConformanceResult> run_conformance(const std::string& node_dir,
                                               const ConformanceOptions& opts = {});

// One test folder.
ConformanceResult run_conformance_test(const std::string& test_dir, const ConformanceOptions& opts = {});

// The table: one line per test, then totals per status.
std::string conformance_table(const std::vector<ConformanceResult>& results, bool show_passed = true);

// The per-operator report of docs/onnx_conformance.md (Markdown), from the
// same tests run on the interpreter and compiled: per ONNX operator, how
// many node tests pass, fail or are unsupported, how many pass compiled and
// how many of those have every op lowered, and why the unsupported ones are.
std::string conformance_report(const std::vector<ConformanceResult>& interpreted,
                               const std::vector<ConformanceResult>& compiled);

// A result's detail on one line: for an unsupported test the first
// unsupported node and why, for a failed one the first difference or error.
std::string conformance_reason(const ConformanceResult& r);

const char* status_name(ConformanceResult::Status s);

}  // namespace kiln
