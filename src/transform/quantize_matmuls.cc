// quantize-matmuls: runs a quantized model's products by a constant int8
// weight as uint8 x int8 products, which pack-matmul-weights{dot=4} packs
// for byte dot products (a CPU with VNNI computes four of them per int32
// lane and instruction) and {dot=2} for int16 ones (AVX2's vpmaddwd: two
// per lane, and an add), instead of int32 multiplies of the values widened
// with their zero point subtracted.
//
// ONNX's MatMulInteger and QLinearMatMul import as a matmul of
// subtract(astype(q, int32), z) by the weight shifted by its zero point
// (src/frontend/onnx/convert_quant.cc): q uint8 (DynamicQuantizeLinear's
// output, as ONNX Runtime's dynamic quantization writes a transformer's
// products), z its zero point (a runtime value for dynamic quantization),
// the weight a constant of int8 values once its zero point of 0 is folded
// (int8, or int32 within int8's range). With w that weight and s[n] the
// sum of its column n:
//
//   sum over k of (q[m, k] - z) * w[k, n] = sum over k of q[m, k] * w[k, n] - z * s[n]
//
// exact in int32 (a product whose sums could reach 2^31, 255 * 128 * K of
// them, is left alone). z is one value, or one per row of q ((..., M, 1)):
// any z the same for every k. A matmul of q by such a weight without a
// zero point (MatMulInteger without a_zero_point) takes the weight as int8.
//
// A QDQ model's float32 matmul (or Gemm, as nn.dense) of dequantize(q) (q
// uint8, one scale sx and zero point zx) by a constant that is, value for
// value, int8 values times a scale per output column sw[n] (found as
// quantize-convs finds a conv's: src/transform/int8_weight.h) becomes
//
//   sx * sw[n] * (product(q, wq) - zx * s[n])
//
// the integer product exact and one float32 multiply after it, where the
// float product rounded each step: results agree within float32 rounding.
//
// Requires: nothing. Guarantees: each rewritten product's variable keeps
// its type (int32, or float32 for a dequantized one) and value (within
// float32 rounding for a dequantized one); the subtract or dequantize it
// read is left to dead-code-elimination when nothing else reads it.
//
//   %xs = subtract(%xw, %z)                    // %xw = astype(%q: uint8, dtype="int32")
//   %y = matmul(%xs, const(Tensor[(2, 2), int32], [[1, 2], [-3, 4]]))
// =>
//   %y_acc = matmul(%q, const(Tensor[(2, 2), int8], [[1, 2], [-3, 4]]))
//   %y_offset = multiply(%z, const(Tensor[(2), int32], [-2, 6]))
//   %y = subtract(%y_acc, %y_offset)
#include <optional>

#include "transform/int8_weight.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// Sums of K products of uint8 by int8 that int32 always holds.
bool sums_fit_int32(int64_t K) { return 255.0 * 128.0 * double(K) < 2147483648.0; }

// The (C, R) transpose of the 2-D tensor `t` (R, C) of T.
template <typename T>
Tensor transposed(const Tensor& t) {
  const int64_t rows = t.dim(0), cols = t.dim(1);
  Tensor out = Tensor::empty({cols, rows}, t.dtype());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out.data<T>()[c * rows + r] = t.data<T>()[r * cols + c];
  return out;
}

class Rewriter : public BindingRewriter {
 public:
  using BindingRewriter::BindingRewriter;

 private:
  static bool is_uint8(const Expr& e) {
    const TensorDesc* t = tensor_desc(e);
    return t && t->dtype == DType::UInt8 && !t->shape.empty();
  }

  bool rewrite(const Binding& b) override {
    const TensorDesc* out = tensor_desc(b.value);
    if (!out) return false;
    if (const CallNode* product = op_call(b.value, "matmul"); product && out->dtype == DType::Int32)
      return rewrite_shifted(b, *product);
    if (out->dtype != DType::Float32) return false;
    if (const CallNode* product = op_call(b.value, "matmul")) return rewrite_dequantized(b, *product, false);
    if (const CallNode* product = op_call(b.value, "nn.dense")) return rewrite_dequantized(b, *product, true);
    return false;
  }

  // A float32 product of dequantize(q) (q uint8, one scale sx and zero
  // point zx) by a constant that is int8 values times a scale per output
  // column sw[n] (QDQ's MatMul; Gemm as nn.dense, whose (N, K) weight has a
  // scale per row):
  //   sx * sw[n] * (product(q, wq) - zx * sum over k of wq[k, n])
  // the integer product exact, one float32 multiply where the float
  // product rounded each step (within float32 rounding of it).
  bool rewrite_dequantized(const Binding& b, const CallNode& product, bool dense) {
    const CallNode* dq = op_call(value_of(product.args[0]), "dequantize");
    if (!dq || !is_uint8(dq->args[0])) return false;
    const ConstantNode* w = as<ConstantNode>(value_of(product.args[1]));
    if (!w || w->value.dtype() != DType::Float32 || w->value.ndim() != 2) return false;
    // Output columns on axis 0, where int8_weight reads channels.
    std::optional<Int8Weight> wq = int8_weight(dense ? w->value : transposed<float>(w->value));
    if (!wq || !sums_fit_int32(wq->values.dim(1))) return false;
    const int64_t N = wq->values.dim(0), zx = dq->attrs.get_int("zero_point");
    const float sx = float(dq->attrs.get_float("scale"));
    std::vector<int64_t> offsets;
    std::vector<float> scales;
    for (int64_t n = 0; n < N; ++n) {
      offsets.push_back(zx * wq->sums[size_t(n)]);
      scales.push_back(sx * wq->scales[size_t(n)]);
    }
    const Tensor values = dense ? wq->values : transposed<int8_t>(wq->values);
    std::vector<Binding> added;
    Expr acc = bind(b.var->name + "_acc",
                    make_op_call(product.op->name, {dq->args[0], make_constant(values)}), added);
    Expr centered =
        make_op_call("subtract", {acc, make_constant(Tensor::from_ints({N}, offsets, DType::Int32))});
    Attrs to_float;
    to_float.set("dtype", std::string("float32"));
    Expr wide = make_op_call("astype", {bind(b.var->name + "_centered", centered, added)}, to_float);
    Expr y = make_op_call("multiply", {bind(b.var->name + "_float", wide, added),
                                       make_constant(Tensor::from_floats({N}, scales))});
    if (!type_equal(y->type, b.var->type)) return false;
    out_.insert(out_.end(), added.begin(), added.end());
    out_.push_back({b.var, y});
    return true;
  }

  // An int32 matmul of subtract(astype(q, int32), z) (or q) by a constant
  // of int8 values.
  bool rewrite_shifted(const Binding& b, const CallNode& product) {
    const ConstantNode* w = as<ConstantNode>(value_of(product.args[1]));
    if (!w || w->value.ndim() != 2) return false;
    std::optional<Tensor> wq = int8_values(w->value);
    if (!wq) return false;
    const int64_t K = wq->dim(0), N = wq->dim(1);
    if (!sums_fit_int32(K)) return false;
    std::vector<Binding> added;
    Expr data = product.args[0];
    Expr zero_point;
    if (!is_uint8(data)) {
      const CallNode* shift = op_call(value_of(data), "subtract");
      const CallNode* wide = shift ? op_call(value_of(shift->args[0]), "astype") : nullptr;
      if (!wide || !is_uint8(wide->args[0])) return false;
      const TensorDesc *q = tensor_desc(wide->args[0]), *z = tensor_desc(shift->args[1]);
      if (!z || z->dtype != DType::Int32 || tensor_desc(shift->args[0])->dtype != DType::Int32) return false;
      // One zero point per row at most: z the same along k.
      if (!z->shape.empty() && (z->shape.back() != 1 || z->shape.size() > q->shape.size())) return false;
      data = wide->args[0];
      zero_point = shift->args[1];
    } else if (w->value.dtype() == DType::Int8) {
      return false;  // already uint8 by int8
    }
    Expr y = make_op_call("matmul", {data, make_constant(*wq)});
    if (zero_point) {
      std::vector<int64_t> sums(size_t(N), 0);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) sums[size_t(n)] += wq->data<int8_t>()[k * N + n];
      y = bind(b.var->name + "_acc", y, added);
      Expr offset =
          make_op_call("multiply", {zero_point, make_constant(Tensor::from_ints({N}, sums, DType::Int32))});
      y = make_op_call("subtract", {y, bind(b.var->name + "_offset", offset, added)});
    }
    if (!type_equal(y->type, b.var->type)) return false;
    out_.insert(out_.end(), added.begin(), added.end());
    out_.push_back({b.var, y});
    return true;
  }
};

}  // namespace

Module quantize_matmuls(const Module& m) {
  return rewrite_host_functions(m, [](const FunctionNode& f) { return Rewriter(f).run(); });
}

}  // namespace kiln
