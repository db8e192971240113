// ONNX window operators: Conv, ConvTranspose, MaxPool, AveragePool,
// GlobalAveragePool, GlobalMaxPool, MaxUnpool.
//
// kiln's window ops are 2-D (NCHW) or 3-D (NCDHW: nn.conv3d,
// nn.conv3d_transpose, nn.max_pool3d, nn.avg_pool3d), whose attributes take
// ONNX's per-axis lists as they are. A 1-D node (NCL) runs as the 2-D op on
// (N, C, 1, L): the attributes are read for the node's own spatial rank,
// then get a leading unit axis (kernel 1, stride 1, dilation 1, no padding),
// and the result loses the unit axis again:
//
//   y = Conv(x: (1, 2, 7), w: (4, 2, 3), pads=[1, 1])
//   =>  %x4 = reshape(%x, newshape=[1, 2, 1, 7]); %w4 = reshape(%w, newshape=[4, 2, 1, 3])
//       %y4 = nn.conv2d(%x4, %w4, padding=[0, 1, 0, 1], ...)   // (1, 4, 1, 7)
//       %y  = reshape(%y4, newshape=[1, 4, 7])
//
// A bias is an add of the bias reshaped to (1, C, 1, ...) before that last
// reshape. MaxPool with its Indices output is nn.max_pool_with_indices (2-D
// or 3-D); MaxUnpool is nn.max_unpool, which takes any rank. The global pools
// reduce over every spatial axis, so they take any rank.
#include <algorithm>
#include <utility>

#include "frontend/onnx/converter.h"

namespace kiln::onnx_import {
namespace {

Expr reshape(NodeContext& n, Expr x, const Shape& shape) {
  if (x->type->tensor.shape == shape) return x;
  return n.call("reshape", {x}, {{"newshape", std::vector<int64_t>(shape)}});
}

// The spatial rank of input 0: 1 (NCL), 2 (NCHW) or 3 (NCDHW).
size_t spatial_rank(NodeContext& n) {
  int64_t r = n.rank(0);
  if (r >= 3 && r <= 5) return static_cast<size_t>(r - 2);
  n.unsupported(
      "only 1-D (N, C, L), 2-D (N, C, H, W) and 3-D (N, C, D, H, W) spatial inputs are supported; "
      "this one has rank " +
      std::to_string(r));
}

// An ints attribute with one entry per spatial axis (default all `def`).
std::vector<int64_t> spatial_attr(NodeContext& n, const std::string& name, size_t s, int64_t def) {
  std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(s, def));
  if (v.size() != s)
    n.fail(name + " has " + std::to_string(v.size()) + " entries; expected " + std::to_string(s) +
           " (one per spatial axis)");
  return v;
}

// ONNX pads [begin..., end...] from pads / auto_pad for the spatial dims of
// `in`. `extent` is the dilated kernel extent per spatial axis.
std::vector<int64_t> window_pads(NodeContext& n, const Shape& in, const std::vector<int64_t>& extent,
                                 const std::vector<int64_t>& strides) {
  size_t s = extent.size();
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
    if (pads.size() != 2 * s)
      n.fail("pads has " + std::to_string(pads.size()) + " entries; expected " + std::to_string(2 * s) +
             " for a " + std::to_string(s) + "-D window");
    for (int64_t p : pads)
      if (p < 0) n.fail("negative pads are not allowed");
    return pads;
  }
  if (auto_pad == "VALID") return std::vector<int64_t>(2 * s, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") n.fail("unknown auto_pad '" + auto_pad + "'");
  std::vector<int64_t> pads(2 * s);
  for (size_t i = 0; i < s; ++i) {
    int64_t size = in[i + 2];
    int64_t out = (size + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + extent[i] - size);
    int64_t small = total / 2, big = total - small;
    pads[i] = auto_pad == "SAME_UPPER" ? small : big;
    pads[i + s] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

// Per-axis values of a 1-D window become 2-D with `unit` on the new H axis.
std::vector<int64_t> lift(const std::vector<int64_t>& v, int64_t unit) {
  if (v.size() != 1) return v;
  return {unit, v[0]};
}

// ONNX pads [begin..., end...] as kiln's [top, left, bottom, right].
std::vector<int64_t> lift_pads(const std::vector<int64_t>& pads) {
  if (pads.size() != 2) return pads;
  return {0, pads[0], 0, pads[1]};
}

// (N, C, L) -> (N, C, 1, L); 4-D tensors pass through.
Expr lift_tensor(NodeContext& n, Expr x) {
  Shape s = x->type->tensor.shape;
  if (s.size() != 3) return x;
  return reshape(n, x, {s[0], s[1], 1, s[2]});
}

// The inverse of lift_tensor for a result of spatial rank `s`.
Expr lower_tensor(NodeContext& n, Expr y, size_t s) {
  if (s != 1) return y;
  const Shape& sh = y->type->tensor.shape;
  return reshape(n, y, {sh[0], sh[1], sh[3]});
}

Expr add_channel_bias(NodeContext& n, Expr y, size_t bias_input) {
  if (!n.has_input(bias_input)) return y;
  Shape bias_shape(y->type->tensor.shape.size(), 1);
  bias_shape[1] = y->type->tensor.shape[1];
  return n.call("add", {y, reshape(n, n.input(bias_input), bias_shape)});
}

void require_weight_rank(NodeContext& n, int64_t weight_rank, size_t s) {
  if (weight_rank != static_cast<int64_t>(s) + 2)
    n.fail("the weight has rank " + std::to_string(weight_rank) + "; expected " + std::to_string(s + 2) +
           " for a " + std::to_string(s) + "-D input");
}

// nn.conv2d of x and w lifted to 2-D (nn.conv3d for 3-D); the 4-D (5-D)
// result and the spatial rank.
std::pair<Expr, size_t> conv_lifted(NodeContext& n, Expr x, Expr w) {
  size_t s = spatial_rank(n);
  const Shape ws = w->type->tensor.shape;
  require_weight_rank(n, static_cast<int64_t>(ws.size()), s);
  std::vector<int64_t> strides = spatial_attr(n, "strides", s, 1),
                       dilations = spatial_attr(n, "dilations", s, 1);
  std::vector<int64_t> extent;
  for (size_t i = 0; i < s; ++i) extent.push_back((ws[i + 2] - 1) * dilations[i] + 1);
  std::vector<int64_t> pads = window_pads(n, x->type->tensor.shape, extent, strides);
  Expr y = n.call(s == 3 ? "nn.conv3d" : "nn.conv2d", {lift_tensor(n, x), lift_tensor(n, w)},
                  {{"strides", lift(strides, 1)},
                   {"padding", lift_pads(pads)},
                   {"dilation", lift(dilations, 1)},
                   {"groups", n.attr_int("group", 1)}});
  return {y, s};
}

void convert_conv(NodeContext& n) {
  auto [y, s] = conv_lifted(n, n.input(0), n.input(1));
  n.set_output(0, lower_tensor(n, add_channel_bias(n, y, 2), s));
}

void convert_conv_transpose(NodeContext& n) {
  size_t s = spatial_rank(n);
  require_weight_rank(n, n.rank(1), s);
  const Shape& in = n.desc(0).shape;
  const Shape& w = n.desc(1).shape;
  std::vector<int64_t> strides = spatial_attr(n, "strides", s, 1),
                       dilations = spatial_attr(n, "dilations", s, 1);
  std::vector<int64_t> out_pad = spatial_attr(n, "output_padding", s, 0);
  std::vector<int64_t> output_shape = n.attr_ints("output_shape");
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (pads.size() != 2 * s) n.fail("pads must have " + std::to_string(2 * s) + " entries");
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // output_shape may also list N and C; the spatial sizes are the last s.
    if (output_shape.size() > s)
      output_shape.erase(output_shape.begin(), output_shape.end() - static_cast<int64_t>(s));
    if (!output_shape.empty() && output_shape.size() != s)
      n.fail("output_shape has " + std::to_string(output_shape.size()) + " entries; expected " +
             std::to_string(s));
    for (size_t i = 0; i < s; ++i) {
      int64_t target = output_shape.empty() ? in[i + 2] * strides[i] : output_shape[i];
      if (target <= 0) n.fail("output_shape " + std::to_string(target) + " is not positive");
      int64_t full = strides[i] * (in[i + 2] - 1) + out_pad[i] + (w[i + 2] - 1) * dilations[i] + 1;
      int64_t total = full - target;
      // Floor division like ONNX's reference, so a negative total (an
      // output larger than the full result) gives a negative pad at the end.
      int64_t small = total >= 0 ? total / 2 : -((-total + 1) / 2), big = total - small;
      // ONNX: SAME_UPPER puts the larger half at the start of the output crop.
      pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      pads[i + s] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad == "VALID") {
    pads.assign(2 * s, 0);
  }
  // A negative pad grows the output: rows and columns past the transposed
  // convolution, which receive no input and are 0 before the bias.
  std::vector<int64_t> grow(2 * s, 0);
  for (size_t i = 0; i < 2 * s; ++i)
    if (pads[i] < 0) {
      grow[i] = -pads[i];
      pads[i] = 0;
    }
  Expr y = n.call(s == 3 ? "nn.conv3d_transpose" : "nn.conv2d_transpose",
                  {lift_tensor(n, n.input(0)), lift_tensor(n, n.input(1))},
                  {{"strides", lift(strides, 1)},
                   {"padding", lift_pads(pads)},
                   {"dilation", lift(dilations, 1)},
                   {"groups", n.attr_int("group", 1)},
                   {"output_padding", lift(out_pad, 0)}});
  if (std::any_of(grow.begin(), grow.end(), [](int64_t g) { return g > 0; })) {
    std::vector<int64_t> width = {0, 0, 0, 0};  // nn.pad: (begin, end) per axis of (N, C, spatial...)
    std::vector<int64_t> g = lift_pads(grow);   // [begin..., end...]
    for (size_t i = 0; i < g.size() / 2; ++i) width.insert(width.end(), {g[i], g[i + g.size() / 2]});
    y = n.call("nn.pad", {y}, {{"pad_width", width}, {"pad_value", 0.0}, {"mode", std::string("constant")}});
  }
  n.set_output(0, lower_tensor(n, add_channel_bias(n, y, 2), s));
}

template <bool Max>
void convert_pool(NodeContext& n) {
  size_t s = spatial_rank(n);
  const bool with_indices = Max && n.has_output(1);
  if (!n.has_attr("kernel_shape")) n.fail("the required attribute 'kernel_shape' is missing");
  std::vector<int64_t> kernel = spatial_attr(n, "kernel_shape", s, 1);
  std::vector<int64_t> strides = spatial_attr(n, "strides", s, 1);
  std::vector<int64_t> dilations = spatial_attr(n, "dilations", s, 1);
  std::vector<int64_t> extent;
  for (size_t i = 0; i < s; ++i) extent.push_back((kernel[i] - 1) * dilations[i] + 1);
  std::vector<int64_t> pads = window_pads(n, n.desc(0).shape, extent, strides);
  Attrs attrs{{"pool_size", lift(kernel, 1)},
              {"strides", lift(strides, 1)},
              {"padding", lift_pads(pads)},
              {"dilation", lift(dilations, 1)},
              {"ceil_mode", n.attr_int("ceil_mode", 0)}};
  if (!Max) attrs.set("count_include_pad", n.attr_int("count_include_pad", 0));
  if (with_indices) {
    // A 1-D input's indices are the same on (N, C, 1, L): its H axis has size 1.
    attrs.set("storage_order", n.attr_int("storage_order", 0));
    Expr t = n.call("nn.max_pool_with_indices", {lift_tensor(n, n.input(0))}, attrs);
    n.set_output(0, lower_tensor(n, n.builder().tuple_item(t, 0), s));
    n.set_output(1, lower_tensor(n, n.builder().tuple_item(t, 1), s));
    return;
  }
  const char* op =
      s == 3 ? (Max ? "nn.max_pool3d" : "nn.avg_pool3d") : (Max ? "nn.max_pool2d" : "nn.avg_pool2d");
  n.set_output(0, lower_tensor(n, n.call(op, {lift_tensor(n, n.input(0))}, attrs), s));
}

// MaxUnpool(X, I, output_shape?) scatters into the default shape, (in - 1)
// * stride + kernel - pad_begin - pad_end per spatial axis, which I indexes.
// A larger output_shape (a constant) zero-pads that result at the end of
// each axis, as ONNX's reference does (its node test checks it).
void convert_max_unpool(NodeContext& n) {
  if (n.rank(0) < 3) n.fail("the input must have rank 3 or more (N, C, spatial...)");
  const Shape& in = n.desc(0).shape;
  const size_t s = in.size() - 2;
  if (!n.has_attr("kernel_shape")) n.fail("the required attribute 'kernel_shape' is missing");
  std::vector<int64_t> kernel = spatial_attr(n, "kernel_shape", s, 1);
  std::vector<int64_t> strides = spatial_attr(n, "strides", s, 1);
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (pads.size() != 2 * s)
    n.fail("pads has " + std::to_string(pads.size()) + " entries; expected " + std::to_string(2 * s));
  std::vector<int64_t> shape = {in[0], in[1]};
  for (size_t i = 0; i < s; ++i)
    shape.push_back((in[i + 2] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + s]);
  Expr y = n.call("nn.max_unpool", {n.input(0), n.input(1)}, {{"output_shape", shape}});
  if (!n.has_input(2)) {
    n.set_output(0, y);
    return;
  }
  std::vector<int64_t> out = n.require_ints(2, "output_shape");
  if (out.size() != in.size())
    n.fail("output_shape has " + std::to_string(out.size()) + " entries; expected " +
           std::to_string(in.size()) + " (the rank of X)");
  std::vector<int64_t> width;  // nn.pad: (begin, end) per axis
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < shape[i] || (i < 2 && out[i] != shape[i]))
      n.unsupported("output_shape " + shape_str(out) + " is smaller than the default unpooled shape " +
                    shape_str(shape) + " (or changes N or C); only growing the spatial axes is supported");
    width.insert(width.end(), {0, out[i] - shape[i]});
  }
  if (out != shape)
    y = n.call("nn.pad", {y}, {{"pad_width", width}, {"pad_value", 0.0}, {"mode", std::string("constant")}});
  n.set_output(0, y);
}

std::vector<int64_t> spatial_axes(NodeContext& n) {
  if (n.rank(0) < 3) n.fail("the input must have rank 3 or more (N, C, spatial...)");
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < n.rank(0); ++i) axes.push_back(i);
  return axes;
}

void convert_global_avg_pool(NodeContext& n) {
  // The 2-D op is what backends match for NCHW; other ranks are a mean.
  if (n.rank(0) == 4) {
    n.set_output(
        0, n.call("nn.adaptive_avg_pool2d", {n.input(0)}, {{"output_size", std::vector<int64_t>{1, 1}}}));
    return;
  }
  n.set_output(0, n.call("mean", {n.input(0)}, {{"axis", spatial_axes(n)}, {"keepdims", int64_t{1}}}));
}

void convert_global_max_pool(NodeContext& n) {
  n.set_output(0, n.call("max", {n.input(0)}, {{"axis", spatial_axes(n)}, {"keepdims", int64_t{1}}}));
}

}  // namespace

Expr conv_from_node_attrs(NodeContext& n, Expr x, Expr w) {
  auto [y, s] = conv_lifted(n, std::move(x), std::move(w));
  return lower_tensor(n, y, s);
}

void add_conv_converters(ConverterTable& t) {
  t["Conv"] = {convert_conv, {"nn.conv2d", "nn.conv3d", "add", "reshape"}};
  t["ConvTranspose"] = {convert_conv_transpose,
                        {"nn.conv2d_transpose", "nn.conv3d_transpose", "add", "reshape", "nn.pad"}};
  t["MaxPool"] = {convert_pool<true>,
                  {"nn.max_pool2d", "nn.max_pool3d", "nn.max_pool_with_indices", "reshape"}};
  t["AveragePool"] = {convert_pool<false>, {"nn.avg_pool2d", "nn.avg_pool3d", "reshape"}};
  t["MaxUnpool"] = {convert_max_unpool, {"nn.max_unpool", "nn.pad"}, 9};
  t["GlobalAveragePool"] = {convert_global_avg_pool, {"nn.adaptive_avg_pool2d", "mean"}};
  t["GlobalMaxPool"] = {convert_global_max_pool, {"max"}};
}

}  // namespace kiln::onnx_import
