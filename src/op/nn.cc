// The nn.* op group: registration, plus nn.batch_norm and nn.pad.
//
// Convolutions live in nn_conv.cc, pooling in nn_pool.cc, matmul and
// nn.dense in nn_matmul.cc; each file's header states its ops' semantics.
//
// nn.batch_norm(x, gamma, beta, moving_mean, moving_var; axis=1,
// epsilon=1e-5): the inference form with one output,
//   y = (x - mean) / sqrt(var + epsilon) * gamma + beta
// along `axis` (negative counts from the end). float32 and float16 (computed
// in float32, rounded once).
//
// nn.pad(x; pad_width=[before_0, after_0, before_1, after_1, ...] with one
// pair per axis, pad_value=0.0, mode="constant"|"edge"|"reflect"). A negative
// value crops that many elements from that side. Output element o of an axis
// reads input o - before: "constant" writes pad_value where that is outside
// the input, "edge" clamps to the nearest input element, "reflect" mirrors
// without repeating the edge (numpy's reflect; the padding must then be less
// than the axis size). All dtypes; pad_value is converted to the dtype
// (saturating for integers).
#include <cmath>
#include <vector>

#include "op/nn_internal.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

// ---- batch_norm -----------------------------------------------------------

const char* kBatchNorm = "nn.batch_norm";

std::vector<TensorDesc> infer_batch_norm(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kBatchNorm;
  const TensorDesc& x = in[0];
  require_dtype(op, "data", x.dtype, {DType::Float32, DType::Float16});
  if (x.shape.empty()) throw Error(op + ": data must have rank >= 1, got a scalar");
  int64_t axis = normalize_axis(op, attrs.get_int("axis"), static_cast<int64_t>(x.shape.size()));
  double eps = attrs.get_float("epsilon");
  if (!(eps >= 0)) throw Error(op + ": attribute 'epsilon' = " + attr_value_str(eps) + " must be >= 0");
  int64_t c = x.shape[static_cast<size_t>(axis)];
  const char* names[] = {"gamma", "beta", "moving_mean", "moving_var"};
  for (size_t i = 1; i < 5; ++i) {
    const TensorDesc& p = in[i];
    if (p.dtype != x.dtype)
      throw Error(op + ": " + names[i - 1] + " has dtype " + std::string(dtype_name(p.dtype)) +
                  " but data has dtype " + std::string(dtype_name(x.dtype)));
    if (p.shape != Shape{c})
      throw Error(op + ": " + names[i - 1] + " has shape " + shape_str(p.shape) + "; expected (" +
                  std::to_string(c) + ",) to match axis " + std::to_string(axis) + " of data " +
                  shape_str(x.shape));
  }
  return {x};
}

void batch_norm_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  int64_t axis = normalize_axis(kBatchNorm, attrs.get_int("axis"), x.ndim());
  const float eps = static_cast<float>(attrs.get_float("epsilon"));
  AxisSplit s = split_at_axis(x.shape(), axis);
  AccBuffer<float> xb(x), gamma(in[1]), beta(in[2]), mean(in[3]), var(in[4]);
  std::vector<float> y(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.n; ++c) {
      const float m = mean.data()[c], sd = std::sqrt(var.data()[c] + eps);
      const float g = gamma.data()[c], b = beta.data()[c];
      const int64_t base = (o * s.n + c) * s.inner;
      for (int64_t k = 0; k < s.inner; ++k)
        y[static_cast<size_t>(base + k)] = (xb.data()[base + k] - m) / sd * g + b;
    }
  store_acc(y.data(), x.numel(), out[0], 0);
}

// ---- pad ------------------------------------------------------------------

const char* kPad = "nn.pad";

enum class PadMode { Constant, Edge, Reflect };

PadMode pad_mode(const Attrs& attrs) {
  const std::string& m = attrs.get_string("mode");
  if (m == "constant") return PadMode::Constant;
  if (m == "edge") return PadMode::Edge;
  if (m == "reflect") return PadMode::Reflect;
  throw Error(std::string(kPad) + ": attribute 'mode' = \"" + m +
              "\" is not one of \"constant\", \"edge\", \"reflect\"");
}

std::vector<TensorDesc> infer_pad(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kPad;
  const TensorDesc& x = in[0];
  const std::vector<int64_t>& pw = attrs.get_ints("pad_width");
  PadMode mode = pad_mode(attrs);
  if (pw.size() != 2 * x.shape.size())
    throw Error(op + ": attribute 'pad_width' has " + std::to_string(pw.size()) + " values; expected " +
                std::to_string(2 * x.shape.size()) + " (a before/after pair for each axis of data " +
                shape_str(x.shape) + ")");
  Shape out = x.shape;
  for (size_t a = 0; a < x.shape.size(); ++a) {
    int64_t d = x.shape[a], before = pw[2 * a], after = pw[2 * a + 1];
    out[a] = d + before + after;
    if (out[a] < 0)
      throw Error(op + ": pad_width (" + std::to_string(before) + ", " + std::to_string(after) +
                  ") crops more than the " + std::to_string(d) + " elements of axis " + std::to_string(a));
    bool grows = before > 0 || after > 0;
    if (mode != PadMode::Constant && grows && d == 0)
      throw Error(op + ": mode \"" + attrs.get_string("mode") + "\" cannot pad the empty axis " +
                  std::to_string(a));
    if (mode == PadMode::Reflect && (before >= d || after >= d) && grows)
      throw Error(op + ": mode \"reflect\" needs padding smaller than the axis size, but axis " +
                  std::to_string(a) + " has size " + std::to_string(d) + " and pad_width (" +
                  std::to_string(before) + ", " + std::to_string(after) + ")");
  }
  return {{out, x.dtype}};
}

// Input index read by output index o of one axis, or -1 for pad_value.
int64_t pad_source(int64_t o, int64_t before, int64_t d, PadMode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : d - 1;
    case PadMode::Reflect:
      return i < 0 ? -i : 2 * (d - 1) - i;
  }
  return -1;
}

void pad_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  const std::vector<int64_t>& pw = attrs.get_ints("pad_width");
  PadMode mode = pad_mode(attrs);
  const size_t rank = static_cast<size_t>(x.ndim());
  Tensor fill = Tensor::empty({1}, x.dtype());
  fill.set_from_double(0, attrs.get_float("pad_value"));
  if (y.numel() == 0) return;
  // Per axis: source index of each output index, pre-multiplied by the input stride.
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<std::vector<int64_t>> src(rank);
  for (size_t a = 0; a < rank; ++a)
    for (int64_t o = 0; o < y.dim(static_cast<int64_t>(a)); ++o) {
      int64_t i = pad_source(o, pw[2 * a], x.dim(static_cast<int64_t>(a)), mode);
      src[a].push_back(i < 0 ? -1 : i * in_strides[a]);
    }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::storage;
    const S* xs = x.data<S>();
    S* ys = y.data<S>();
    const S pad_value = fill.data<S>()[0];
    if (rank == 0) {
      ys[0] = xs[0];
      return;
    }
    const int64_t n = y.dim(-1);
    const std::vector<int64_t>& last = src[rank - 1];
    std::vector<int64_t> idx(rank - 1, 0);
    for (int64_t row = 0, rows = y.numel() / n; row < rows; ++row) {
      int64_t off = 0;
      bool outside = false;
      for (size_t a = 0; a + 1 < rank; ++a) {
        int64_t s = src[a][static_cast<size_t>(idx[a])];
        outside = outside || s < 0;
        off += s;
      }
      S* dst = ys + row * n;
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = last[static_cast<size_t>(j)];
        dst[j] = outside || s < 0 ? pad_value : xs[off + s];
      }
      for (size_t a = rank - 1; a-- > 0;) {
        if (++idx[a] < y.dim(static_cast<int64_t>(a))) break;
        idx[a] = 0;
      }
    }
  });
}

}  // namespace

void register_nn_ops(OpRegistry& r) {
  register_nn_conv_ops(r);
  register_nn_blocked_ops(r);
  register_nn_pool_ops(r);
  register_nn_matmul_ops(r);
  register_nn_winograd_ops(r);
  r.add({kBatchNorm,
         "inference batch normalisation along one axis",
         5,
         5,
         {{"axis", AttrKind::Int, int64_t{1}}, {"epsilon", AttrKind::Float, 1e-5}},
         false,
         infer_batch_norm,
         batch_norm_kernel});
  r.add({kPad,
         "pads (or crops) each axis with a constant, the edge value, or a reflection",
         1,
         1,
         {{"pad_width", AttrKind::Ints, std::nullopt},
          {"pad_value", AttrKind::Float, 0.0},
          {"mode", AttrKind::String, std::string("constant")}},
         false,
         infer_pad,
         pad_kernel});
}

}  // namespace kiln
