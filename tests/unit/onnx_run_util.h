// Runs small in-memory ONNX models for the importer tests: interpreted and
// compiled with the same values, or the import error's message.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "driver/compile_model.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "onnx_test_util.h"

namespace kiln::onnx_test {

inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

inline void expect_near_all(const Tensor& t, const std::vector<double>& want, double tol,
                            const std::string& what) {
  std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// Interpreted, then compiled: the compiled outputs must match the
// interpreter's (ops without a lowering run on their reference kernel).
// Returns the interpreter's outputs.
inline std::vector<Tensor> run_both(const ModelBuilder& b, const std::vector<Tensor>& args) {
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions opts;
  opts.check_bounds = true;
  VirtualMachine vm(driver::compile_model(m, opts, nullptr));
  std::vector<Tensor> got = vm.run(args);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    std::vector<double> g = values_of(got[i]), w = values_of(want[i]);
    EXPECT_EQ(g.size(), w.size()) << "output " << i;
    for (size_t k = 0; k < g.size() && k < w.size(); ++k)
      EXPECT_NEAR(g[k], w[k], 1e-5 * (1 + std::fabs(w[k]))) << "compiled output " << i << " element " << k;
  }
  return want;
}

inline std::string import_error(const ModelBuilder& b) {
  try {
    import_onnx_bytes(b.bytes(), "m.onnx");
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

inline void expect_contains(const std::string& msg, const std::string& needle) {
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
}

}  // namespace kiln::onnx_test
