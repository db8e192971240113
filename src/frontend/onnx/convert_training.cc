// ONNX's training operators (domain ai.onnx.preview.training): Adagrad, Adam
// and Momentum, one optimizer step each, decomposed into elementwise ops.
//
// Each takes a learning rate R and an update count T (scalars), then N
// tensors to optimize X_1..X_N, their gradients G_1..G_N and one or two
// state tensors per X; it returns the updated X's, then the updated states.
// With g = norm_coefficient * X + G (the gradient of an L2 term added):
//
//   Adagrad:  r = R / (1 + T * decay_factor);  H' = H + g*g
//             X' = X - r * g / (sqrt(H') + epsilon)
//   Momentum: b = T > 0 ? beta : 1;  V' = alpha * V + b * g
//             X' = X - R * V'                       (mode "standard")
//             X' = X - R * (g + alpha * V')         (mode "nesterov")
//   Adam:     V' = alpha * V + (1 - alpha) * g;  H' = beta * H + (1 - beta) * g*g
//             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
//             X' = (1 - norm_coefficient_post) * (X - r * V' / (sqrt(H') + epsilon))
//
// R and T may be graph inputs (the step count changes every step); the
// scalar factors are computed in X's dtype.
#include <string>
#include <vector>

#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

// The inputs of an optimizer with `states` state tensors per optimized X.
struct OptimizerInputs {
  Expr r, t;  // R and T in the dtype of the X's
  std::vector<Expr> x, g;
  std::vector<std::vector<Expr>> state;  // state[s][i]
  DType dtype = DType::Float32;
};

OptimizerInputs read_optimizer_inputs(NodeContext& n, int states, const char* state_names) {
  const int per_x = 2 + states;
  const int64_t count = static_cast<int64_t>(n.num_inputs()) - 2;
  if (count < per_x || count % per_x != 0)
    n.fail("takes R, T and " + std::to_string(per_x) + " inputs per optimized tensor (X..., G..., " +
           state_names + "), got " + std::to_string(n.num_inputs()) + " inputs");
  const size_t num_x = static_cast<size_t>(count / per_x);
  if (n.num_outputs() != num_x * static_cast<size_t>(1 + states))
    n.fail("optimizes " + std::to_string(num_x) + " tensor(s), so it has " +
           std::to_string(num_x * static_cast<size_t>(1 + states)) + " outputs, got " +
           std::to_string(n.num_outputs()));
  if (n.rank(0) != 0 && !(n.rank(0) == 1 && n.desc(0).shape[0] == 1))
    n.fail("input 0 (the learning rate R) must be a scalar");
  if (n.rank(1) != 0 && !(n.rank(1) == 1 && n.desc(1).shape[0] == 1))
    n.fail("input 1 (the update count T) must be a scalar");
  if (n.desc(1).dtype != DType::Int64)
    n.fail("input 1 (the update count T) must be int64, got " + std::string(dtype_name(n.desc(1).dtype)));

  OptimizerInputs in;
  in.dtype = n.desc(2).dtype;
  if (in.dtype != DType::Float32 && in.dtype != DType::Float64)
    n.fail("optimizes float32 or float64 tensors, got " + std::string(dtype_name(in.dtype)));
  auto scalar_of = [&](size_t i) {
    Expr e = n.input(i);
    if (n.rank(i) == 1) e = n.call("reshape", {e}, {{"newshape", std::vector<int64_t>{}}});
    return n.call("astype", {e}, {{"dtype", std::string(dtype_name(in.dtype))}});
  };
  in.r = scalar_of(0);
  in.t = scalar_of(1);
  in.state.resize(static_cast<size_t>(states));
  for (size_t k = 0; k < static_cast<size_t>(per_x); ++k) {
    for (size_t i = 0; i < num_x; ++i) {
      size_t idx = 2 + k * num_x + i;
      const TensorDesc& d = n.desc(idx);
      const TensorDesc& x = n.desc(2 + i);
      if (d.dtype != x.dtype || d.shape != x.shape)
        n.fail("input " + std::to_string(idx) + " has type " + type_str(n.input(idx)->type) +
               " but the tensor it belongs to (input " + std::to_string(2 + i) + ") has " +
               type_str(n.input(2 + i)->type) + "; they must match");
      if (d.dtype != in.dtype)
        n.fail("all optimized tensors must have one dtype: input " + std::to_string(idx) + " is " +
               std::string(dtype_name(d.dtype)) + ", input 2 is " + std::string(dtype_name(in.dtype)));
      Expr e = n.input(idx);
      if (k == 0)
        in.x.push_back(e);
      else if (k == 1)
        in.g.push_back(e);
      else
        in.state[k - 2].push_back(e);
    }
  }
  return in;
}

struct Eltwise {
  NodeContext& n;
  DType dtype;
  Expr c(double v) { return n.scalar(v, dtype); }
  Expr add(Expr a, Expr b) { return n.call("add", {a, b}); }
  Expr sub(Expr a, Expr b) { return n.call("subtract", {a, b}); }
  Expr mul(Expr a, Expr b) { return n.call("multiply", {a, b}); }
  Expr div(Expr a, Expr b) { return n.call("divide", {a, b}); }
  Expr sqrt(Expr a) { return n.call("sqrt", {a}); }
  // T > 0 ? a : b, for T in the optimized dtype.
  Expr if_positive(Expr t, Expr a, Expr b) { return n.call("where", {n.call("greater", {t, c(0)}), a, b}); }
  // norm_coefficient * x + g, without the multiply when the coefficient is 0.
  Expr regularized(double norm, Expr x, Expr g) { return norm == 0 ? g : add(mul(c(norm), x), g); }
};

void convert_adagrad(NodeContext& n) {
  OptimizerInputs in = read_optimizer_inputs(n, 1, "H...");
  const double decay = n.attr_float("decay_factor", 0.0);
  const double epsilon = n.attr_float("epsilon", 1e-6);
  const double norm = n.attr_float("norm_coefficient", 0.0);
  Eltwise e{n, in.dtype};
  Expr r = e.div(in.r, e.add(e.c(1), e.mul(in.t, e.c(decay))));
  const size_t num_x = in.x.size();
  for (size_t i = 0; i < num_x; ++i) {
    Expr g = e.regularized(norm, in.x[i], in.g[i]);
    Expr h = e.add(in.state[0][i], e.mul(g, g));
    Expr x = e.sub(in.x[i], e.div(e.mul(r, g), e.add(e.sqrt(h), e.c(epsilon))));
    n.set_output(i, x);
    n.set_output(num_x + i, h);
  }
}

void convert_momentum(NodeContext& n) {
  OptimizerInputs in = read_optimizer_inputs(n, 1, "V...");
  const double alpha = n.attr_float("alpha", 0.0);
  const double beta = n.attr_float("beta", 0.0);
  const double norm = n.attr_float("norm_coefficient", 0.0);
  const std::string mode = n.attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    n.fail("mode '" + mode + "' is not one of 'standard' and 'nesterov'");
  Eltwise e{n, in.dtype};
  Expr b = e.if_positive(in.t, e.c(beta), e.c(1));
  const size_t num_x = in.x.size();
  for (size_t i = 0; i < num_x; ++i) {
    Expr g = e.regularized(norm, in.x[i], in.g[i]);
    Expr v = e.add(e.mul(e.c(alpha), in.state[0][i]), e.mul(b, g));
    Expr step = mode == "standard" ? v : e.add(g, e.mul(e.c(alpha), v));
    n.set_output(i, e.sub(in.x[i], e.mul(in.r, step)));
    n.set_output(num_x + i, v);
  }
}

void convert_adam(NodeContext& n) {
  OptimizerInputs in = read_optimizer_inputs(n, 2, "V..., H...");
  const double alpha = n.attr_float("alpha", 0.9);
  const double beta = n.attr_float("beta", 0.999);
  const double epsilon = n.attr_float("epsilon", 1e-6);
  const double norm = n.attr_float("norm_coefficient", 0.0);
  const double norm_post = n.attr_float("norm_coefficient_post", 0.0);
  Eltwise e{n, in.dtype};
  Expr alpha_t = n.call("power", {e.c(alpha), in.t});
  Expr beta_t = n.call("power", {e.c(beta), in.t});
  Expr corrected = e.div(e.mul(in.r, e.sqrt(e.sub(e.c(1), beta_t))), e.sub(e.c(1), alpha_t));
  Expr r = e.if_positive(in.t, corrected, in.r);
  const size_t num_x = in.x.size();
  for (size_t i = 0; i < num_x; ++i) {
    Expr g = e.regularized(norm, in.x[i], in.g[i]);
    Expr v = e.add(e.mul(e.c(alpha), in.state[0][i]), e.mul(e.c(1 - alpha), g));
    Expr h = e.add(e.mul(e.c(beta), in.state[1][i]), e.mul(e.c(1 - beta), e.mul(g, g)));
    Expr x = e.sub(in.x[i], e.mul(r, e.div(v, e.add(e.sqrt(h), e.c(epsilon)))));
    if (norm_post != 0) x = e.mul(e.c(1 - norm_post), x);
    n.set_output(i, x);
    n.set_output(num_x + i, v);
    n.set_output(2 * num_x + i, h);
  }
}

}  // namespace

void add_training_converters(ConverterTable& t) {
  const std::vector<std::string> ops = {"add",   "subtract", "multiply", "divide", "sqrt",
                                        "power", "where",    "greater",  "astype", "reshape"};
  const std::string domain = std::string(kTrainingDomain) + ".";
  t[domain + "Adagrad"] = {convert_adagrad, ops, 1};
  t[domain + "Adam"] = {convert_adam, ops, 1};
  t[domain + "Momentum"] = {convert_momentum, ops, 1};
}

}  // namespace kiln::onnx_import
