// Loss ops: nn.nll_loss (the negative log-likelihood loss of ONNX
// NegativeLogLikelihoodLoss; SoftmaxCrossEntropyLoss is nn.log_softmax
// followed by it).
//
// nn.nll_loss(log_prob, target[, weight]; reduction="mean", ignore_index):
//   log_prob is float32 of shape (N, C, d1..dk), target int32/int64 of shape
//   (N, d1..dk) holding class indices in [0, C), weight float32 of shape (C).
//   Element loss = -log_prob[n, target, d...] * weight[target]; a target equal
//   to ignore_index contributes 0 with weight 0 (ignore_index may be any
//   value, in or out of [0, C); the default, INT64_MIN, means none).
//   reduction "none" gives the (N, d1..dk) element losses, "sum" their sum,
//   "mean" their sum divided by the sum of the weights of the targets not
//   ignored (ONNX's rule). A target outside [0, C) that is not ignored is an
//   error.
#include <limits>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

constexpr int64_t kNoIgnore = std::numeric_limits<int64_t>::min();

std::vector<TensorDesc> nll_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "nn.nll_loss";
  const TensorDesc& x = in[0];
  const TensorDesc& t = in[1];
  require_dtype(op, "input log_prob", x.dtype, {DType::Float32});
  require_dtype(op, "input target", t.dtype, {DType::Int32, DType::Int64});
  if (x.shape.size() < 2)
    throw Error(op + ": input log_prob must have shape (N, C, d1..dk), got " + desc_str(x));
  Shape want = {x.shape[0]};
  want.insert(want.end(), x.shape.begin() + 2, x.shape.end());
  if (t.shape != want)
    throw Error(op + ": input target must have shape (N, d1..dk) of log_prob " + desc_str(x) + ", got " +
                desc_str(t));
  if (in.size() > 2) {
    require_dtype(op, "input weight", in[2].dtype, {x.dtype});
    if (in[2].shape != Shape{x.shape[1]})
      throw Error(op + ": input weight must have shape (C,) = (" + std::to_string(x.shape[1]) + ",), got " +
                  desc_str(in[2]));
  }
  const std::string& red = attrs.get_string("reduction");
  if (red == "none") return {{want, x.dtype}};
  if (red == "sum" || red == "mean") return {{Shape{}, x.dtype}};
  throw Error(op + ": attribute 'reduction' must be 'none', 'sum' or 'mean', got '" + red + "'");
}

void nll_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& t = in[1];
  const float* pw = in.size() > 2 ? in[2].data<float>() : nullptr;
  const int64_t ignore = attrs.get_int("ignore_index");
  const std::string& red = attrs.get_string("reduction");
  const int64_t n = x.shape()[0], c = x.shape()[1];
  int64_t d = 1;
  for (size_t i = 2; i < x.shape().size(); ++i) d *= x.shape()[i];
  const float* px = x.data<float>();
  std::vector<double> loss(static_cast<size_t>(n * d));
  double loss_sum = 0, weight_sum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      int64_t idx = i * d + j;
      int64_t cls = t.dtype() == DType::Int64 ? t.data<int64_t>()[idx] : t.data<int32_t>()[idx];
      if (cls == ignore) continue;
      if (cls < 0 || cls >= c)
        throw Error("nn.nll_loss: target value " + std::to_string(cls) + " at flat index " +
                    std::to_string(idx) + " is out of range [0, " + std::to_string(c) +
                    ") and is not the ignore_index");
      double w = pw ? pw[cls] : 1.0;
      double l = -static_cast<double>(px[(i * c + cls) * d + j]) * w;
      loss[static_cast<size_t>(idx)] = l;
      loss_sum += l;
      weight_sum += w;
    }
  float* py = out[0].data<float>();
  if (red == "none") {
    for (size_t k = 0; k < loss.size(); ++k) py[k] = static_cast<float>(loss[k]);
  } else if (red == "sum") {
    py[0] = static_cast<float>(loss_sum);
  } else {
    py[0] = static_cast<float>(loss_sum / weight_sum);
  }
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  r.add({"nn.nll_loss",
         "negative log-likelihood loss of (N, C, d...) log-probabilities at int targets; optional class "
         "weights, ignore_index, reduction none/sum/mean",
         2,
         3,
         {{"reduction", AttrKind::String, AttrValue(std::string("mean"))},
          {"ignore_index", AttrKind::Int, AttrValue(kNoIgnore)}},
         false,
         nll_infer,
         nll_kernel});
}

}  // namespace kiln
