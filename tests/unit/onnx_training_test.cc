// ONNX's training operators against values computed here from their
// definitions: the training-domain optimizers (Adagrad, Adam, Momentum) and
// BatchNormalization in training mode. Each model runs interpreted and
// compiled, with the same values; errors name the operator and the problem,
// including nodes of a domain the model does not import or kiln lacks.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_run_util.h"

namespace kiln {
namespace {

using namespace kiln::onnx_test;

constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kI64 = onnx::TensorProto_DataType_INT64;
const char* kTraining = "ai.onnx.preview.training";

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
  std::vector<Tensor> y = run_both(
      b, {f32({}, {0.1f}), scalar_i64(2), f32({2}, {1, 2}), f32({2}, {0.5, -1}), f32({2}, {0.1f, 0.2f})});
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
      std::vector<Tensor> y = run_both(b, {f32({}, {0.1f}), scalar_i64(T), f32({2}, {1, 2}),
                                           f32({2}, {0.5, -1}), f32({2}, {0.2f, -0.4f})});
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
    std::vector<Tensor> y =
        run_both(b, {f32({}, {0.1f}), scalar_i64(T), f32({2}, {1, 2}), f32({2}, {0.5, -1}),
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
  expect_contains(import_error(wrong_count), "inputs per optimized tensor");
  ModelBuilder bad_mode = optimizer_model("Momentum", 1);
  for (const char* name : {"alpha", "beta", "norm_coefficient"})
    attr_float(bad_mode.graph().mutable_node(0), name, 0.5f);
  auto* a = bad_mode.graph().mutable_node(0)->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s("heavy-ball");
  expect_contains(import_error(bad_mode), "mode 'heavy-ball' is not one of");
  ModelBuilder no_import(17);
  no_import.input("R", {});
  no_import.output("y", {});
  no_import.node("Adagrad", {"R"}, {"y"})->set_domain(kTraining);
  expect_contains(import_error(no_import), kTraining);
  ModelBuilder unknown(17);
  unknown.input("x", {2});
  unknown.output("y", {2});
  unknown.node("Frobnicate", {"x"}, {"y"})->set_domain("com.example");
  auto* o = unknown.model.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  expect_contains(import_error(unknown), "operator domain 'com.example' is not supported");
}

TEST(OnnxTraining, BatchNormalizationTrainingModeUsesBatchStatistics) {
  // x (N=2, C=2, 1, 2): channel 0 holds 1, 2, 5, 6; channel 1 holds 0, 0, 4, 4.
  ModelBuilder b(15);
  b.input("x", {2, 2, 1, 2});
  for (const char* name : {"scale", "bias", "mean", "var"}) b.input(name, {2});
  b.output("y", {2, 2, 1, 2});
  b.output("running_mean", {2});
  b.output("running_var", {2});
  auto* n = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                   {"y", "running_mean", "running_var"});
  attr_int(n, "training_mode", 1);
  attr_float(n, "momentum", 0.9f);
  attr_float(n, "epsilon", 1e-5f);
  const std::vector<float> xs = {1, 2, 0, 0, 5, 6, 4, 4};
  std::vector<Tensor> y = run_both(
      b, {f32({2, 2, 1, 2}, xs), f32({2}, {2, 1}), f32({2}, {0.5, -1}), f32({2}, {1, 1}), f32({2}, {2, 3})});
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

}  // namespace
}  // namespace kiln
