// pack-matmul-weights{lanes=N}: a float32 matmul or nn.dense whose right
// operand is a 2-D constant becomes nn.matmul_packed on that constant packed
// into panels (nn.pack_matmul_weight, src/op/nn_matmul.cc), each as wide as
// the register tile the product is computed in on a CPU whose vectors hold
// N float32 lanes (schedule::product_column_block). fold-constants then
// packs the weight once, at compile time.
//
// Why: a product's kernel reads its right operand one column tile at a
// time, K rows of a few dozen columns. Unpacked, those rows are a whole
// matrix row apart, so each column tile first copies its rows into a
// contiguous panel, on every call, from rows spread over the matrix (rec's
// head, 120 x 6625: one cache line of each of 120 rows per tile, a pattern
// the hardware prefetchers do not follow). Packed, the panels are the
// constant itself, read in place from start to end.
//
// An nn.conv2d of a 1x1 kernel on a 1x1 image (N, C, 1, 1), its weight a
// constant (OC, C, 1, 1), one group and no padding, is the same product of the image's
// rows (N, C) by the weight as (OC, C) read transposed (a squeeze-and-excite
// block's fully connected layers): it becomes a reshape to rows, the packed
// product and a reshape back. Left as a conv, its kernel has one output
// column and no vector to fill (PP-OCR rec's 480 -> 120 with AVX-512: 103
// us of scalar multiply-adds).
//
// pack-matmul-weights{dot=4} (a CPU with byte dot products, VNNI) also
// packs the int8 constant of a product of uint8 data into int32, in groups
// of four rows (nn.pack_matmul_weight of int8): nn.matmul_packed then sums
// four byte products per lane and step (quantize-matmuls writes a quantized
// model's products so). dot=2 (a CPU with vpmaddwd but no byte dot
// products: AVX2) packs the weight as int16 in pairs of rows instead, for
// two int16 products per lane and step.
//
// Requires: nothing; run fold-constants and dead-code-elimination after it
// (the packed weights are calls on constants until folded). Guarantees:
// every variable keeps its type and value; the function's results are
// unchanged.
//
//   %y = matmul(%x: (40, 120), const (120, 6625))
// =>
//   %y = nn.matmul_packed(%x, nn.pack_matmul_weight(const, columns=32), units=6625)
//
// Products by one constant (an unrolled recurrent layer's steps, all
// reading R) share its packed weight: one binding %packed_weight, folded
// once, rather than one packed copy per product.
//
//   %s = nn.conv2d(%p: (1, 480, 1, 1), const (120, 480, 1, 1))
// =>
//   %s_rows = reshape(%p, newshape=[1, 480])
//   %s_product = nn.matmul_packed(%s_rows, nn.pack_matmul_weight(reshape(const,
//                newshape=[120, 480]), columns=40, transpose=1), units=120)
//   %s = reshape(%s_product, newshape=[1, 120, 1, 1])
#include <map>
#include <string>
#include <tuple>

#include "schedule/schedule.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// The packed weights of a function, one binding per constant and packing,
// so products by one weight (an unrolled recurrent layer's steps, all
// reading R) share one packed constant instead of each folding its own.
// A weight one product reads is packed in place (the call nested in the
// product's).
class PackedWeights {
 public:
  PackedWeights(const FunctionNode& f, FreshNames& fresh, std::vector<Binding>& out)
      : fresh_(fresh), out_(out) {
    for (const Binding& b : f.bindings)
      if (const CallNode* c = as<CallNode>(b.value); c && c->args.size() == 2) ++readers_[c->args[1].get()];
  }
  Expr operator()(const Expr& w, const Attrs& pack_attrs) {
    Expr pack = make_op_call("nn.pack_matmul_weight", {w}, pack_attrs);
    if (readers_[w.get()] < 2) return pack;
    const auto key = std::make_tuple(w.get(), pack_attrs.get_int("columns"), pack_attrs.get_int("transpose"));
    auto it = bound_.find(key);
    if (it != bound_.end()) return it->second;
    Var v = make_var(fresh_("packed_weight"), pack->type);
    out_.push_back({v, pack});
    bound_[key] = v;
    return v;
  }

 private:
  FreshNames& fresh_;
  std::vector<Binding>& out_;
  std::map<const ExprNode*, int> readers_;  // per constant: the calls reading it second
  std::map<std::tuple<const ExprNode*, int64_t, int64_t>, Var> bound_;
};

// matmul(x, w) or nn.dense(x, w), float32 throughout (or, with `dot` 4 or
// 2, x uint8, w int8 and the product int32), w a 2-D constant: the packed
// product; else null.
Expr packed_product(const Expr& value, const schedule::CpuTarget& cpu, int64_t dot, PackedWeights& packed) {
  const CallNode* c = as<CallNode>(value);
  if (!c || !c->is_op_call()) return nullptr;
  const CallNode& call = *c;
  const std::string& op = call.op->name;
  const bool dense = op == "nn.dense";
  if ((!dense && op != "matmul") || call.args.size() != 2) return nullptr;
  const ConstantNode* w = as<ConstantNode>(call.args[1]);
  const TensorDesc *x = tensor_desc(call.args[0]), *y = tensor_desc(value);
  if (!w || !x || !y || w->value.ndim() != 2 || x->shape.empty()) return nullptr;
  const bool floats =
      w->value.dtype() == DType::Float32 && x->dtype == DType::Float32 && y->dtype == DType::Float32;
  const bool bytes =
      dot && w->value.dtype() == DType::Int8 && x->dtype == DType::UInt8 && y->dtype == DType::Int32;
  if (!floats && !bytes) return nullptr;
  const int64_t units = w->value.dim(dense ? 0 : 1);
  Attrs pa;
  pa.set("columns", schedule::product_column_block(cpu, units));
  pa.set("transpose", int64_t{dense ? 1 : 0});
  Attrs ma;
  ma.set("units", units);
  Expr weight = call.args[1];
  if (bytes && dot == 2) {
    Attrs wide;
    wide.set("dtype", std::string("int16"));
    weight = make_op_call("astype", {weight}, wide);
  }
  return make_op_call("nn.matmul_packed", {call.args[0], packed(weight, pa)}, ma);
}

Expr reshaped(const Expr& x, std::vector<int64_t> shape) {
  Attrs a;
  a.set("newshape", std::move(shape));
  return make_op_call("reshape", {x}, a);
}

// nn.conv2d(x: (N, C, 1, 1), w: constant (OC, C, 1, 1)), one group, float32
// throughout: the product of x's rows by w as (OC, C), transposed
// (nn.dense's reading), bound to fresh variables before `var`; false when
// the call is not of that form.
bool pack_pointwise_conv(const Binding& b, const schedule::CpuTarget& cpu, FreshNames& fresh,
                         std::vector<Binding>& out) {
  const CallNode* c = as<CallNode>(b.value);
  if (!c || !c->is_op_call() || c->op->name != "nn.conv2d" || c->args.size() != 2) return false;
  const ConstantNode* w = as<ConstantNode>(c->args[1]);
  const TensorDesc *x = tensor_desc(c->args[0]), *y = tensor_desc(b.value);
  if (!w || !x || !y || w->value.dtype() != DType::Float32 || x->dtype != DType::Float32 ||
      y->dtype != DType::Float32 || x->shape.size() != 4 || y->shape.size() != 4 || w->value.ndim() != 4)
    return false;
  const Shape one_pixel{1, 1};
  const Shape &xs = x->shape, &ys = y->shape;
  if (Shape(xs.begin() + 2, xs.end()) != one_pixel || Shape(ys.begin() + 2, ys.end()) != one_pixel ||
      w->value.dim(2) != 1 || w->value.dim(3) != 1 || w->value.dim(1) != xs[1] ||
      c->attrs.get_int("groups") != 1)
    return false;
  // Padding would put the output pixel on a padded one (stride 3 past a
  // padding of 1 still gives one pixel).
  for (int64_t p : c->attrs.get_ints("padding"))
    if (p != 0) return false;
  const int64_t n = xs[0], channels = xs[1], units = ys[1];
  Attrs pa;
  pa.set("columns", schedule::product_column_block(cpu, units));
  pa.set("transpose", int64_t{1});
  Attrs ma;
  ma.set("units", units);
  Expr rows = reshaped(c->args[0], {n, channels});
  Var rv = make_var(fresh(b.var->name + "_rows"), rows->type);
  Expr product = make_op_call(
      "nn.matmul_packed",
      {rv, make_op_call("nn.pack_matmul_weight", {reshaped(c->args[1], {units, channels})}, pa)}, ma);
  Var pv = make_var(fresh(b.var->name + "_product"), product->type);
  out.push_back({rv, rows});
  out.push_back({pv, product});
  out.push_back({b.var, reshaped(pv, {n, units, 1, 1})});
  return true;
}

Function pack_function(const FunctionNode& f, const schedule::CpuTarget& cpu, int64_t dot) {
  FreshNames fresh(f);
  std::vector<Binding> out;
  PackedWeights weights(f, fresh, out);
  bool changed = false;
  for (const Binding& b : f.bindings) {
    if (pack_pointwise_conv(b, cpu, fresh, out)) {
      changed = true;
      continue;
    }
    Expr packed = packed_product(b.value, cpu, dot, weights);
    out.push_back({b.var, packed ? packed : b.value});
    changed |= packed != nullptr;
  }
  if (!changed) return nullptr;
  return make_function(f.name, f.params, std::move(out), f.result, f.attrs);
}

}  // namespace

Module pack_matmul_weights(const Module& m, const PassOptions& options) {
  check_pass_option_keys(options, "pack-matmul-weights", {"lanes", "dot"});
  const int64_t lanes =
      required_integer_pass_option(options, "pack-matmul-weights", "lanes", 1, 64,
                                   "the float32 lanes of the host's vectors, e.g. lanes=16");
  const int64_t dot = dot_pass_option(options, "pack-matmul-weights", "uint8 x int8 products are packed");
  schedule::CpuTarget cpu;
  cpu.vector_bytes = int(lanes * 4);
  return rewrite_host_functions(m, [&](const FunctionNode& f) { return pack_function(f, cpu, dot); });
}

}  // namespace kiln
