// convert-layout{block=N}: runs float32 convs, and the elementwise ops and
// global average pools between them, in the channel-blocked layout NCHWc
// (src/op/nn_blocked.cc), so consecutive convs pass blocked values to each
// other instead of converting back and forth.
//
// A conv2d with a constant weight, one group or depthwise, whose output
// channels are multiples of N (its vector's float32 lanes) and whose input
// is blocked already or whose rows leave NCHW's vectors partly idle
// (idles_lanes_in_nchw: 20 columns in vectors of 16; not for a conv that
// winograd-weights takes in NCHW but not in blocks, winograd_tile_rows and
// blocked_winograd_tile_rows) becomes
// conv2d_blocked on the blocked input and the blocked weight
// (block_conv_weight of the constant, which fold-constants then folds: the
// weight is packed once, at compile time). An elementwise op becomes its
// blocked form when one operand is blocked and every other one is blocked
// too (with the same channels), a constant per channel ((1, C, 1, 1) or
// (C, 1, 1), rewritten blocked) or a constant of one element; astype to
// float16 and back (a float16 model's rounded results, widen-float16) is
// one of them, its float16 values blocked too. A global
// average pool (adaptive_avg_pool2d to 1x1) of a blocked value becomes a
// mean over its rows and columns; a max pool of one pools the blocks, and
// an nn.pad of its rows and columns pads the blocks. Each rewritten binding
// keeps its variable as unblock_channels of the blocked result, for the
// users that stay in NCHW; a value is blocked once (block_channels) however
// many convs read it. A one-group conv whose result a blocked conv had to
// block that way (directly or through elementwise ops of one variable
// operand, each result used once) is rerun blocked, reading its NCHW input
// as it is, so it writes the blocked value itself (producers_to_block).
// Anything else is left as it is.
//
// With dot=4 (the target's byte dot products have `block` lanes), a
// quantized model's integer convs (uint8 data by a constant int8 weight
// into int32, quantize-convs) run blocked too, always (their NCHW lanes are
// output columns, which narrow maps idle and strides scatter), their
// weights in groups of four input channels (nn.block_conv_weight of int8);
// with dot=2 (no byte dot products, but vpmaddwd's int16 pairs with
// `block` lanes: AVX2) the same, the weight widened to int16 and blocked
// in pairs of input channels;
// the integers between them stay blocked (quantize and dequantize are
// elementwise), and an NCHW operand of an elementwise op beside blocked
// ones is blocked to meet them.
//
// Requires: nothing; run fold-constants and dead-code-elimination after it
// (the blocked weights are calls on constants until folded, and the unblocked
// copies no one reads are dead). Guarantees: every variable keeps its type
// and value; the function's results are unchanged.
//
//   %c = nn.conv2d(%x: (1, 16, 8, 8), %w: const (16, 16, 1, 1))
//   %r = nn.relu(%c)
//   %p = nn.max_pool2d(%r)
// =>
//   %x_b = nn.block_channels(%x, block=16)
//   %c_b = nn.conv2d_blocked(%x_b, nn.block_conv_weight(%w, in_block=16, out_block=16))
//   %c   = nn.unblock_channels(%c_b)
//   %r_b = nn.relu(%c_b)
//   %r   = nn.unblock_channels(%r_b)
//   %p   = nn.max_pool2d(%r)
#include <set>
#include <unordered_map>

#include "ir/visitor.h"
#include "transform/pass.h"

namespace kiln {
namespace {

// The elementwise ops that keep their meaning on blocked values: no
// attribute names an axis, and broadcasting follows the operands' shapes.
const std::set<std::string>& elementwise_ops() {
  static const std::set<std::string> ops = {
      "add",     "subtract",      "multiply",        "divide",        "maximum", "minimum",
      "nn.relu", "nn.hard_swish", "nn.hard_sigmoid", "nn.leaky_relu", "clip",    "sigmoid",
      "tanh",    "exp",           "negative",        "abs",           "nn.gelu", "sqrt",
      "square",  "erf",           "floor",           "ceil",          "round",   "sign",
      "nn.silu", "astype",        "quantize",        "dequantize"};
  return ops;
}

bool is_nchw(const Expr& e, DType dtype) {
  const TensorDesc* d = tensor_desc(e);
  return d && d->dtype == dtype && d->shape.size() == 4 && !d->bounded_outer;
}

bool is_float32_nchw(const Expr& e) { return is_nchw(e, DType::Float32); }

// A conv of uint8 data by a constant int8 weight into int32 (quantize-convs
// writes them): blocked for dot products with dot=4 or dot=2.
bool is_integer_conv(const CallNode& call) {
  return is_nchw(call.args[0], DType::UInt8) && as<ConstantNode>(call.args[1]) &&
         is_nchw(call.args[1], DType::Int8) && call.type->is_tensor() &&
         call.type->tensor.dtype == DType::Int32;
}

class LayoutConverter {
 public:
  // `produce_blocked`: convs (by their variables) to run blocked whatever
  // their rows, reading an NCHW input as it is (producers_to_block).
  // `dot`: integer convs too, their weights in groups of four int8 or two int16 (0: none).
  LayoutConverter(const FunctionNode& f, int64_t block, int64_t dot, std::set<const VarNode*> produce_blocked)
      : f_(f), block_(block), dot_(dot), fresh_(f), produce_blocked_(std::move(produce_blocked)) {
    std::vector<const ExprNode*> used;
    for (const Binding& b : f.bindings) {
      producer_[b.var.get()] = b.value;
      collect_used_vars(b.value, used);
    }
    collect_used_vars(f.result, used);
    for (const ExprNode* v : used) ++uses_[v];
  }

  // The NCHW convs whose results this run blocked for a blocked conv (through
  // elementwise ops used once each): run blocked, they write the blocked
  // result themselves instead of a pass converting it. MobileNetV2's 1x1
  // 16 -> 96 conv at 112x112 before a 3x3/2 depthwise whose rows of 56
  // idle NCHW's lanes: its block_channels of 4.8 MB took 236 us.
  const std::set<const VarNode*>& producers_to_block() const { return producers_to_block_; }

  Function run() {
    for (const Binding& b : f_.bindings) {
      const CallNode* call = as<CallNode>(b.value);
      Expr blocked = call && call->is_op_call() ? convert(*b.var, *call) : nullptr;
      if (!blocked) {
        out_.push_back(b);
        continue;
      }
      Var v = make_var(fresh_(b.var->name + "_b"), blocked->type);
      out_.push_back({v, blocked});
      out_.push_back({b.var, make_op_call("nn.unblock_channels", {v})});
      blocked_[b.var.get()] = v;
      changed_ = true;
    }
    if (!changed_) return nullptr;
    return make_function(f_.name, f_.params, std::move(out_), f_.result, f_.attrs);
  }

 private:
  // Whether an NCHW conv writing rows of `width` columns leaves a tenth or
  // more of its vector lanes idle: its kernels vectorize along the columns,
  // in vectors of `block` lanes (20 columns in vectors of 16: 20 of 32
  // lanes). A blocked conv fills every lane at any width, but where NCHW
  // fills its lanes too its kernels are as fast or faster (PP-OCR rec's 1x1
  // convs at 12x80: 0.55 against 0.52 ms with AVX-512, 1.25 against 1.05 ms
  // with AVX2), and leaving the layout costs a pass over the data.
  bool idles_lanes_in_nchw(int64_t width) const {
    const int64_t lanes = ((width + block_ - 1) / block_) * block_;
    return 10 * width < 9 * lanes;
  }

  // Whether winograd-weights would compute the conv by F(m, 3) and that
  // beats the blocked direct conv (see convert_conv).
  bool winograd_takes(const TensorDesc& x, const TensorDesc& w, const TensorDesc& y, const Attrs& a) const {
    const int64_t m = winograd_tile_rows(x, w, y, a);
    return m == 4 || (m == 2 && y.shape[3] > block_);
  }

  // Whether winograd-weights would run the conv by F(m, 3) in channel
  // blocks once its input `x` is blocked (blocked_winograd_tile_rows).
  bool blocked_winograd_takes(const Expr& x, const TensorDesc& w, const TensorDesc& y, const Attrs& a) const {
    return blockable(x) && winograd_tile_rows(*tensor_desc(x), w, y, a) != 0 &&
           blocked_winograd_tile_rows(y.shape[0], y.shape[2], y.shape[3]) != 0;
  }

  // The channels of `x` in blocks, when they are a multiple of the block.
  bool blockable(const Expr& x) const { return is_float32_nchw(x) && tensor_desc(x)->shape[1] % block_ == 0; }

  // An NCHW value of any type block_channels takes, in whole blocks.
  bool blockable_value(const Expr& x) const {
    const TensorDesc* d = tensor_desc(x);
    return d && d->shape.size() == 4 && !d->bounded_outer && d->shape[1] % block_ == 0 &&
           (d->dtype == DType::Float32 || d->dtype == DType::UInt8 || d->dtype == DType::Int8 ||
            d->dtype == DType::Int32);
  }

  // The blocked value of a variable, if one was made.
  Expr blocked_of(const Expr& x) const {
    const VarNode* v = as<VarNode>(x);
    if (!v) return nullptr;
    auto it = blocked_.find(v);
    return it == blocked_.end() ? nullptr : Expr(it->second);
  }

  // `x` blocked: its blocked value, else block_channels of it (bound once).
  Expr block(const Expr& x) {
    if (Expr b = blocked_of(x)) return b;
    if (const VarNode* p = conv_producing(x)) producers_to_block_.insert(p);
    Expr call = make_op_call("nn.block_channels", {x}, block_attrs());
    const VarNode* v = as<VarNode>(x);
    if (!v) return call;
    Var bv = make_var(fresh_(v->name + "_b"), call->type);
    out_.push_back({bv, call});
    blocked_[v] = bv;
    return bv;
  }

  Attrs block_attrs() const {
    Attrs a;
    a.set("block", block_);
    return a;
  }

  // The variable of the conv that `x` is, or that elementwise ops of one
  // variable operand each (a bias, an activation) turn into `x`, each
  // result but `x` used once; null if none or if the conv cannot run
  // blocked from an NCHW input (blocks_from_nchw).
  const VarNode* conv_producing(const Expr& x) const {
    const VarNode* v = as<VarNode>(x);
    while (v) {
      auto it = producer_.find(v);
      const CallNode* call = it == producer_.end() ? nullptr : as<CallNode>(it->second);
      if (!call || !call->is_op_call()) return nullptr;
      if (call->op->name == "nn.conv2d") return blocks_from_nchw(*call) ? v : nullptr;
      if (!elementwise_ops().count(call->op->name)) return nullptr;
      const VarNode* operand = nullptr;
      for (const Expr& a : call->args) {
        if (as<ConstantNode>(a)) continue;
        if (operand || !as<VarNode>(a)) return nullptr;
        operand = as<VarNode>(a);
      }
      if (!operand || uses_.count(operand) == 0 || uses_.at(operand) != 1) return nullptr;
      v = operand;
    }
    return nullptr;
  }

  // Whether a conv can run blocked: a float32 constant weight, float32 data,
  // output channels in whole blocks, and one group or depthwise (which
  // *depthwise tells).
  bool blockable_conv(const CallNode& call, bool* depthwise) const {
    const Expr &x = call.args[0], &w = call.args[1];
    *depthwise = false;
    if (dot_ && is_integer_conv(call))
      return call.attrs.get_int("groups") == 1 && call.type->tensor.shape[1] % block_ == 0 &&
             tensor_desc(x)->shape[1] % 4 == 0 && block_ % 4 == 0;
    if (!as<ConstantNode>(w) || !is_float32_nchw(x) || !is_float32_nchw(w)) return false;
    const TensorDesc& out = call.type->tensor;
    if (out.dtype != DType::Float32 || out.shape[1] % block_ != 0) return false;
    const int64_t groups = call.attrs.get_int("groups"), channels = tensor_desc(x)->shape[1];
    const Shape& ws = tensor_desc(w)->shape;
    *depthwise = groups > 1 && groups == channels && ws[0] == channels && ws[1] == 1;
    return groups == 1 || *depthwise;
  }

  // Whether a conv may run blocked on an NCHW input that fills whole
  // blocks: blockable, one group (a depthwise conv reads its input blocked),
  // and not one that winograd-weights takes.
  bool blocks_from_nchw(const CallNode& call) const {
    bool depthwise = false;
    // (An integer conv is blocked whatever its input, with its input.)
    return !is_integer_conv(call) && blockable_conv(call, &depthwise) && !depthwise &&
           !winograd_takes(*tensor_desc(call.args[0]), *tensor_desc(call.args[1]), call.type->tensor,
                           call.attrs);
  }

  Expr convert(const VarNode& var, const CallNode& call) {
    const std::string& op = call.op->name;
    if (op == "nn.conv2d") return convert_conv(var, call);
    if (op == "nn.adaptive_avg_pool2d") return convert_global_pool(call);
    if (op == "nn.pad") return convert_pad(call);
    if (op == "nn.max_pool2d") return convert_max_pool(call);
    if (elementwise_ops().count(op)) return convert_elementwise(call);
    return nullptr;
  }

  Expr convert_conv(const VarNode& var, const CallNode& call) {
    const Expr &x = call.args[0], &w = call.args[1];
    bool depthwise = false;
    if (!blockable_conv(call, &depthwise)) return nullptr;
    const TensorDesc& out = call.type->tensor;
    // An integer conv always: in NCHW its dot products take lanes of output
    // columns, which narrow maps leave idle and strides scatter; in blocks,
    // lanes of output channels (ResNet-18 QDQ's 512 -> 512 3x3 at 7x7, one
    // thread, Zen 5: 1.32 ms in float32, 0.32 as a uint8 conv in blocks).
    // Input channels that fill no block go in blocks of four (the groups of
    // its dot products): an image's 3, padded to 4 by quantize-convs.
    if (is_integer_conv(call)) {
      if (tensor_desc(x)->shape[1] % block_ == 0) return blocked_conv(call, block(x), block_);
      Attrs fours;
      fours.set("block", int64_t{4});
      Expr blocked = make_op_call("nn.block_channels", {x}, fours);
      Var v = make_var(fresh_(var.name + "_fours"), blocked->type);
      out_.push_back({v, blocked});
      return blocked_conv(call, v, 4);
    }
    // An NCHW input is blocked only for rows that idle NCHW's lanes, and not
    // for a conv that winograd-weights takes in NCHW only: F(m, 3) in NCHW
    // beats the blocked direct conv with its conversions (3x3 32 -> 32 at
    // 40x40 with AVX-512: 151 -> 97 us; 64 -> 64 at 20x20 with AVX2 code:
    // 291 -> 229 us), except F(2, 3) (fewer than 16 rows that 4 does not
    // divide) on rows of one partial vector: it saves a third of the
    // multiply-adds, and its products' tiles of one vector, each broadcast
    // feeding one multiply-add, lose more (one thread, Zen 5: 512 -> 512 at
    // 7x7 2.88 ms against 1.10 blocked with AVX-512, 3.84 against 2.80 with
    // AVX2 code; 256 -> 256 at 14x14 1.54 against 1.09 with AVX-512, but
    // 2.03 against 2.35 with AVX2 code, whose rows of 14 take two vectors).
    // F(m, 3) in blocks beats it in turn (blocked_winograd_takes: 128 ->
    // 128 at 28x28 0.73-0.80 -> 0.63 ms with AVX-512, 1.72-1.83 -> 1.32 ms
    // with AVX2 code; 64 -> 64 at 56x56 0.75 -> 0.66 ms with AVX-512). A
    // conv whose result a blocked conv reads (producers_to_block) runs
    // blocked and reads its NCHW input as it is.
    const bool produce_blocked = produce_blocked_.count(&var) > 0;
    if (!blocked_of(x) && !produce_blocked &&
        (!idles_lanes_in_nchw(out.shape[3]) ||
         (winograd_takes(*tensor_desc(x), *tensor_desc(w), out, call.attrs) &&
          !blocked_winograd_takes(x, *tensor_desc(w), out, call.attrs))))
      return nullptr;
    // Input channels that do not fill blocks (an image's 3) are read in
    // NCHW, as blocks of one channel.
    const bool nchw_input = !blocked_of(x) && (!blockable(x) || produce_blocked);
    if (nchw_input && depthwise) return nullptr;
    return blocked_conv(call, nchw_input ? x : block(x), depthwise || nchw_input ? 1 : block_);
  }

  // conv2d_blocked of the blocked (or NCHW) input `x` and the conv's weight
  // in blocks of `in_block` input channels.
  Expr blocked_conv(const CallNode& call, const Expr& x, int64_t in_block) const {
    Attrs wa;
    wa.set("in_block", in_block);
    wa.set("out_block", block_);
    Expr w = call.args[1];
    if (dot_ == 2 && is_integer_conv(call)) {
      Attrs wide;
      wide.set("dtype", std::string("int16"));
      w = make_op_call("astype", {w}, wide);
    }
    Expr bw = make_op_call("nn.block_conv_weight", {w}, wa);
    Attrs ca;
    for (const char* name : {"strides", "padding", "dilation", "groups"})
      ca.set(name, *call.attrs.find(name));
    return make_op_call("nn.conv2d_blocked", {x, bw}, ca);
  }

  // nn.max_pool2d of a blocked value: the same pool, in blocks (each
  // channel pooled alone, so the block is one more axis of lanes).
  Expr convert_max_pool(const CallNode& call) {
    Expr x = blocked_of(call.args[0]);
    if (!x) return nullptr;
    return make_op_call(*call.op, {x}, call.attrs);
  }

  // nn.pad of a blocked value on its rows and columns only: the same pad in
  // blocks (nothing on the block axis).
  Expr convert_pad(const CallNode& call) {
    Expr x = blocked_of(call.args[0]);
    const std::vector<int64_t>& pw = call.attrs.get_ints("pad_width");  // (begin, end) per axis
    if (!x || pw.size() != 8 || pw[0] || pw[1] || pw[2] || pw[3]) return nullptr;
    Attrs a = call.attrs;
    std::vector<int64_t> blocked = pw;
    blocked.insert(blocked.end(), {0, 0});
    a.set("pad_width", blocked);
    return make_op_call(*call.op, {x}, a);
  }

  // adaptive_avg_pool2d to 1x1 of a blocked value: the mean of its rows and columns.
  Expr convert_global_pool(const CallNode& call) {
    Expr x = blocked_of(call.args[0]);
    if (!x || call.attrs.get_ints("output_size") != std::vector<int64_t>{1, 1}) return nullptr;
    Attrs a;
    a.set("axis", std::vector<int64_t>{2, 3});
    a.set("keepdims", int64_t{1});
    return make_op_call("mean", {x}, a);
  }

  Expr convert_elementwise(const CallNode& call) {
    if (!call.type->is_tensor()) return nullptr;
    const TensorDesc& out = call.type->tensor;
    // Float16 values in blocks: the rounding of a float16 model's results
    // to float16 and back (widen-float16).
    const bool rounding = call.op->name == "astype" && out.dtype == DType::Float16;
    // A quantized model's integers between its integer convs (dot=4 or 2).
    const bool integers =
        dot_ && (out.dtype == DType::UInt8 || out.dtype == DType::Int8 || out.dtype == DType::Int32);
    if ((out.dtype != DType::Float32 && !rounding && !integers) || out.shape.size() != 4) return nullptr;
    const int64_t channels = out.shape[1];
    if (channels % block_ != 0) return nullptr;
    std::vector<Expr> args;
    bool any_blocked = false;
    // With integer convs, an NCHW operand of the result's shape beside blocked
    // ones is blocked too (a quantized ResNet's shortcut from the max pool):
    // one conversion either way, and the ops after stay blocked.
    std::vector<size_t> to_block;
    for (const Expr& a : call.args) {
      const TensorDesc* d = tensor_desc(a);
      if (!d) return nullptr;
      if (Expr b = blocked_of(a); b && d->shape[1] == channels) {
        args.push_back(b);
        any_blocked = true;
      } else if (const ConstantNode* c = as<ConstantNode>(a)) {
        Expr blocked_constant = block_constant(*c, channels);
        if (!blocked_constant) return nullptr;
        args.push_back(blocked_constant);
      } else if (dot_ && as<VarNode>(a) && d->shape == out.shape && blockable_value(a)) {
        to_block.push_back(args.size());
        args.push_back(a);
      } else {
        return nullptr;
      }
    }
    if (!any_blocked) return nullptr;
    for (size_t k : to_block) args[k] = block(args[k]);
    return make_op_call(*call.op, args, call.attrs);
  }

  // A constant operand in the blocked layout: one element stays as it is; a
  // per-channel one ((1, C, 1, 1) or (C, 1, 1)) becomes (1, C / N, 1, 1, N).
  Expr block_constant(const ConstantNode& c, int64_t channels) const {
    const Tensor& t = c.value;
    if (t.numel() == 1) return make_constant(t);
    if (t.numel() != channels) return nullptr;
    const Shape& s = t.shape();
    const bool per_channel = (s.size() == 4 && s[0] == 1 && s[1] == channels && s[2] == 1 && s[3] == 1) ||
                             (s.size() == 3 && s[0] == channels && s[1] == 1 && s[2] == 1);
    if (!per_channel) return nullptr;
    // Channel-major values in blocks of N are already in blocked order.
    return make_constant(t.clone().reshape({1, channels / block_, 1, 1, block_}));
  }

  const FunctionNode& f_;
  const int64_t block_;
  const int64_t dot_;  // integer convs' weight groups: 4 int8, 2 int16 (0: float32 convs only)
  FreshNames fresh_;
  std::vector<Binding> out_;
  std::unordered_map<const VarNode*, Var> blocked_;
  std::unordered_map<const VarNode*, Expr> producer_;
  std::unordered_map<const ExprNode*, int> uses_;
  std::set<const VarNode*> produce_blocked_, producers_to_block_;
  bool changed_ = false;
};

}  // namespace

Module convert_layout(const Module& m, const PassOptions& options) {
  check_pass_option_keys(options, "convert-layout", {"block", "dot"});
  const int64_t block = required_integer_pass_option(options, "convert-layout", "block", 2, 64,
                                                     "the float32 lanes of a vector, e.g. block=16");
  const int64_t dot = dot_pass_option(options, "convert-layout", "uint8 by int8 convs run in blocks");
  return rewrite_host_functions(m, [&](const FunctionNode& f) {
    // Again with the convs the first run had to block the results of
    // producing them blocked (their NCHW inputs are read as they are, so
    // a second run adds none).
    // Integer convs where there are any (a quantized model's).
    bool integers = false;
    for (const Binding& b : f.bindings)
      if (const CallNode* c = as<CallNode>(b.value); c && c->is_op_call() && c->op->name == "nn.conv2d")
        integers = integers || is_integer_conv(*c);
    const int64_t integer_dot = integers ? dot : 0;
    LayoutConverter first(f, block, integer_dot, {});
    Function converted = first.run();
    if (!first.producers_to_block().empty())
      converted = LayoutConverter(f, block, integer_dot, first.producers_to_block()).run();
    return converted;
  });
}

}  // namespace kiln
