// ONNX operators outside the plain inference set, against values computed
// here from the operator definitions: the training-domain optimizers
// (Adagrad, Adam, Momentum), BatchNormalization in training mode, the window
// functions, ReverseSequence and Det. Each model runs interpreted and
// compiled, with the same values. Errors name the operator and the problem.
#include <gtest/gtest.h>

#include <cmath>

#include "driver/compile_model.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "onnx_test_util.h"

namespace kiln {
namespace {

using onnx_test::attr_float;
using onnx_test::attr_int;
using onnx_test::ModelBuilder;

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kF64 = onnx::TensorProto_DataType_DOUBLE;
constexpr int32_t kI64 = onnx::TensorProto_DataType_INT64;
const char* kTraining = "ai.onnx.preview.training";

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

void expect_near_all(const Tensor& t, const std::vector<double>& want, double tol, const std::string& what) {
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// Interpreted, then compiled: the compiled outputs must match the
// interpreter's (ops without a lowering run on their reference kernel).
std::vector<Tensor> run_model(const ModelBuilder& b, const std::vector<Tensor>& args) {
  Module m = import_onnx_bytes(b.bytes(), "m.onnx");
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileOptions opts;
  opts.check_bounds = true;
  VirtualMachine vm(driver::compile_model(m, opts, nullptr));
  std::vector<Tensor> got = vm.run(args);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    std::vector<double> g = values(got[i]), w = values(want[i]);
    EXPECT_EQ(g.size(), w.size()) << "output " << i;
    for (size_t k = 0; k < g.size() && k < w.size(); ++k)
      EXPECT_NEAR(g[k], w[k], 1e-5 * (1 + std::fabs(w[k]))) << "compiled output " << i << " element " << k;
  }
  return want;
}

std::string error_of(const ModelBuilder& b) {
  try {
    import_onnx_bytes(b.bytes(), "m.onnx");
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

void expect_contains(const std::string& msg, const std::string& needle) {
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected to contain: " << needle;
}

void import_training_domain(ModelBuilder& b) {
  auto* o = b.model.add_opset_import();
  o->set_domain(kTraining);
  o->set_version(1);
}

Tensor f32(const Shape& s, const std::vector<float>& v) { return Tensor::from_floats(s, v); }
Tensor scalar_i64(int64_t v) { return Tensor::from_ints({}, {v}); }

// One optimizer over X = [1, 2], G = [0.5, -1] with R and T as graph inputs.
ModelBuilder optimizer_model(const std::string& op, int states) {
  ModelBuilder b(17);
  import_training_domain(b);
  b.input("R", {});
  b.input("T", {}, kI64);
  std::vector<std::string> ins = {"R", "T", "X", "G"};
  b.input("X", {2});
  b.input("G", {2});
  b.output("X_new", {2});
  std::vector<std::string> outs = {"X_new"};
  for (int s = 0; s < states; ++s) {
    std::string name = "S" + std::to_string(s);
    b.input(name, {2});
    ins.push_back(name);
    b.output(name + "_new", {2});
    outs.push_back(name + "_new");
  }
  b.node(op, ins, outs)->set_domain(kTraining);
  return b;
}

TEST(OnnxTraining, AdagradStep) {
  ModelBuilder b = optimizer_model("Adagrad", 1);
  auto* n = b.graph().mutable_node(0);
  attr_float(n, "decay_factor", 0.1f);
  attr_float(n, "epsilon", 1e-6f);
  attr_float(n, "norm_coefficient", 0.01f);
  const double R = 0.1, T = 2, x[2] = {1, 2}, g0[2] = {0.5, -1}, h[2] = {0.1, 0.2};
  std::vector<Tensor> y =
      run_model(b, {f32({}, {0.1f}), scalar_i64(2), f32({2}, {1, 2}), f32({2}, {0.5, -1}), f32({2}, {0.1f, 0.2f})});
  std::vector<double> want_x, want_h;
  for (int i = 0; i < 2; ++i) {
    double g = 0.01 * x[i] + g0[i];
    double hn = h[i] + g * g;
    double r = R / (1 + T * 0.1);
    want_h.push_back(hn);
    want_x.push_back(x[i] - r * g / (std::sqrt(hn) + 1e-6));
  }
  expect_near_all(y.at(0), want_x, 1e-6, "X_new");
  expect_near_all(y.at(1), want_h, 1e-6, "H_new");
}

TEST(OnnxTraining, MomentumStandardAndNesterov) {
  const double R = 0.1, alpha = 0.9, beta = 0.5, x[2] = {1, 2}, g[2] = {0.5, -1}, v[2] = {0.2, -0.4};
  for (std::string mode : {"standard", "nesterov"}) {
    for (int64_t T : {0, 5}) {
      ModelBuilder b = optimizer_model("Momentum", 1);
      auto* n = b.graph().mutable_node(0);
      attr_float(n, "alpha", 0.9f);
      attr_float(n, "beta", 0.5f);
      attr_float(n, "norm_coefficient", 0.0f);
      auto* a = n->add_attribute();
      a->set_name("mode");
      a->set_type(onnx::AttributeProto_AttributeType_STRING);
      a->set_s(mode);
      std::vector<Tensor> y = run_model(
          b, {f32({}, {0.1f}), scalar_i64(T), f32({2}, {1, 2}), f32({2}, {0.5, -1}), f32({2}, {0.2f, -0.4f})});
      std::vector<double> want_x, want_v;
      for (int i = 0; i < 2; ++i) {
        // The first step (T = 0) takes the gradient at full weight.
        double vn = alpha * v[i] + (T > 0 ? beta : 1.0) * g[i];
        want_v.push_back(vn);
        want_x.push_back(mode == "standard" ? x[i] - R * vn : x[i] - R * (g[i] + alpha * vn));
      }
      expect_near_all(y.at(0), want_x, 1e-6, mode + " X_new, T = " + std::to_string(T));
      expect_near_all(y.at(1), want_v, 1e-6, mode + " V_new, T = " + std::to_string(T));
    }
  }
}

TEST(OnnxTraining, AdamBiasCorrectionDependsOnT) {
  const double R = 0.1, alpha = 0.9, beta = 0.999, eps = 1e-6, x[2] = {1, 2}, g[2] = {0.5, -1},
               v[2] = {0.2, -0.4}, h[2] = {0.1, 0.3};
  for (int64_t T : {0, 3}) {
    ModelBuilder b = optimizer_model("Adam", 2);
    std::vector<Tensor> y = run_model(b, {f32({}, {0.1f}), scalar_i64(T), f32({2}, {1, 2}), f32({2}, {0.5, -1}),
                                          f32({2}, {0.2f, -0.4f}), f32({2}, {0.1f, 0.3f})});
    std::vector<double> want_x, want_v, want_h;
    for (int i = 0; i < 2; ++i) {
      double vn = alpha * v[i] + (1 - alpha) * g[i];
      double hn = beta * h[i] + (1 - beta) * g[i] * g[i];
      double r = T > 0 ? R * std::sqrt(1 - std::pow(beta, T)) / (1 - std::pow(alpha, T)) : R;
      want_v.push_back(vn);
      want_h.push_back(hn);
      want_x.push_back(x[i] - r * vn / (std::sqrt(hn) + eps));
    }
    std::string at = "T = " + std::to_string(T);
    expect_near_all(y.at(0), want_x, 1e-5, "X_new, " + at);
    expect_near_all(y.at(1), want_v, 1e-6, "V_new, " + at);
    expect_near_all(y.at(2), want_h, 1e-6, "H_new, " + at);
  }
}

TEST(OnnxTraining, OptimizerErrorsNameTheProblem) {
  ModelBuilder wrong_count = optimizer_model("Adam", 1);  // Adam needs two states per X
  expect_contains(error_of(wrong_count), "inputs per optimized tensor");
  ModelBuilder bad_mode = optimizer_model("Momentum", 1);
  for (const char* name : {"alpha", "beta", "norm_coefficient"})
    attr_float(bad_mode.graph().mutable_node(0), name, 0.5f);
  auto* a = bad_mode.graph().mutable_node(0)->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s("heavy-ball");
  expect_contains(error_of(bad_mode), "mode 'heavy-ball' is not one of");
  ModelBuilder no_import(17);
  no_import.input("R", {});
  no_import.output("y", {});
  no_import.node("Adagrad", {"R"}, {"y"})->set_domain(kTraining);
  expect_contains(error_of(no_import), kTraining);
  ModelBuilder unknown(17);
  unknown.input("x", {2});
  unknown.output("y", {2});
  unknown.node("Frobnicate", {"x"}, {"y"})->set_domain("com.example");
  auto* o = unknown.model.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  expect_contains(error_of(unknown), "operator domain 'com.example' is not supported");
}

TEST(OnnxTraining, BatchNormalizationTrainingModeUsesBatchStatistics) {
  // x (N=2, C=2, 1, 2): channel 0 holds 1, 2, 5, 6; channel 1 holds 0, 0, 4, 4.
  ModelBuilder b(15);
  b.input("x", {2, 2, 1, 2});
  for (const char* name : {"scale", "bias", "mean", "var"}) b.input(name, {2});
  b.output("y", {2, 2, 1, 2});
  b.output("running_mean", {2});
  b.output("running_var", {2});
  auto* n = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "running_mean", "running_var"});
  attr_int(n, "training_mode", 1);
  attr_float(n, "momentum", 0.9f);
  attr_float(n, "epsilon", 1e-5f);
  const std::vector<float> xs = {1, 2, 0, 0, 5, 6, 4, 4};
  std::vector<Tensor> y = run_model(b, {f32({2, 2, 1, 2}, xs), f32({2}, {2, 1}), f32({2}, {0.5, -1}),
                                        f32({2}, {1, 1}), f32({2}, {2, 3})});
  // Batch mean 3.5 and 2; population variance (6.25 + 2.25) / 2 = 4.25 and 4.
  const double mean[2] = {3.5, 2}, var[2] = {4.25, 4}, scale[2] = {2, 1}, bias[2] = {0.5, -1};
  std::vector<double> want_y;
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t c = (i / 2) % 2;
    want_y.push_back(scale[c] * (xs[i] - mean[c]) / std::sqrt(var[c] + 1e-5) + bias[c]);
  }
  expect_near_all(y.at(0), want_y, 1e-5, "y");
  expect_near_all(y.at(1), {0.9 * 1 + 0.1 * 3.5, 0.9 * 1 + 0.1 * 2}, 1e-6, "running_mean");
  expect_near_all(y.at(2), {0.9 * 2 + 0.1 * 4.25, 0.9 * 3 + 0.1 * 4}, 1e-6, "running_var");
}

TEST(OnnxSignal, WindowFunctions) {
  const double pi = std::acos(-1.0);
  struct Case {
    std::string op;
    int64_t size;
    bool periodic;
    std::vector<double> want;
  };
  std::vector<Case> cases = {
      // Periodic Hann of 4: 0.5 - 0.5 cos(2 pi n / 4).
      {"HannWindow", 4, true, {0, 0.5, 1, 0.5}},
      // Periodic Blackman of 4: 0.42 - 0.5 cos(2 pi n / 4) + 0.08 cos(4 pi n / 4).
      {"BlackmanWindow", 4, true, {0, 0.34, 1, 0.34}},
      {"HammingWindow", 5, false, {}},
  };
  // Symmetric Hamming of 5: 25/46 - 21/46 cos(2 pi n / 4).
  for (int k = 0; k < 5; ++k) cases[2].want.push_back(25.0 / 46 - 21.0 / 46 * std::cos(2 * pi * k / 4));
  for (const Case& c : cases) {
    ModelBuilder b(17);
    b.initializer("size", Tensor::from_ints({}, {c.size}));
    b.output("w", {c.size}, kF64);
    auto* n = b.node(c.op, {"size"}, {"w"});
    attr_int(n, "output_datatype", kF64);
    attr_int(n, "periodic", c.periodic ? 1 : 0);
    std::vector<Tensor> y = run_model(b, {});
    EXPECT_EQ(y.at(0).dtype(), DType::Float64) << c.op;
    expect_near_all(y.at(0), c.want, 1e-12, c.op);
  }
  ModelBuilder bad(17);
  bad.input("size", {}, kI64);
  bad.output("w", {4});
  bad.node("HannWindow", {"size"}, {"w"});
  expect_contains(error_of(bad), "window size");
}

TEST(OnnxShape, ReverseSequenceReversesEachBatchEntrysPrefix) {
  // Time along axis 0 (4 steps), batch along axis 1: column b holds 10b + t.
  ModelBuilder b(10);
  b.input("x", {4, 2});
  b.initializer("lens", Tensor::from_ints({2}, {4, 2}));
  b.output("y", {4, 2});
  auto* n = b.node("ReverseSequence", {"x", "lens"}, {"y"});
  attr_int(n, "time_axis", 0);
  attr_int(n, "batch_axis", 1);
  std::vector<Tensor> y = run_model(b, {f32({4, 2}, {0, 10, 1, 11, 2, 12, 3, 13})});
  // Column 0 fully reversed; column 1 only its first two steps.
  EXPECT_EQ(values(y.at(0)), (std::vector<double>{3, 11, 2, 10, 1, 12, 0, 13}));
  ModelBuilder too_long(10);
  too_long.input("x", {4, 2});
  too_long.initializer("lens", Tensor::from_ints({2}, {5, 1}));
  too_long.output("y", {4, 2});
  too_long.node("ReverseSequence", {"x", "lens"}, {"y"});
  expect_contains(error_of(too_long), "sequence_lens[0] is 5; it must be in [0, 4]");
}

TEST(OnnxLinalg, DetOfABatch) {
  ModelBuilder b(11);
  b.input("x", {2, 2, 2});
  b.output("d", {2});
  b.node("Det", {"x"}, {"d"});
  // 1*4 - 2*3 and 3*1 - 0*5.
  std::vector<Tensor> y = run_model(b, {f32({2, 2, 2}, {1, 2, 3, 4, 3, 0, 5, 1})});
  expect_near_all(y.at(0), {-2, 3}, 1e-6, "det");
  ModelBuilder vec(11);
  vec.input("x", {3});
  vec.output("d", {});
  vec.node("Det", {"x"}, {"d"});
  expect_contains(error_of(vec), "Det needs [..., M, M]");
}

}  // namespace
}  // namespace kiln
