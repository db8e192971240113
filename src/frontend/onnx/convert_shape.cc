// ONNX shape and data-movement operators: Reshape, Flatten, Transpose,
// Concat, Split, Slice, Squeeze, Unsqueeze, Shape, Size, Gather,
// GatherElements, GatherND, ScatterND, ScatterElements (and the older
// Scatter), Expand, Tile, ConstantOfShape, Constant, Range, EyeLike, Where,
// Trilu, OneHot, Pad, DepthToSpace, SpaceToDepth.
//
// OneHot decomposes: where(equal(indices[..., None, ...], iota), on, off),
// with negative indices wrapped by depth first.
//
// Shapes and axes that ONNX passes as tensors must be constants here (kiln
// needs static shapes); they are, once the inputs are bound, because every
// call with constant arguments folds (see GraphBuilder::call).
#include <algorithm>
#include <cmath>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln::onnx_import {
namespace {

// Constants the importer creates itself (ConstantOfShape, Range) stay below
// this many elements, so a corrupt model cannot exhaust memory.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 28;

Expr reshape(NodeContext& n, Expr x, const Shape& shape) {
  if (x->type->tensor.shape == shape) return x;
  return n.call("reshape", {x}, {{"newshape", std::vector<int64_t>(shape)}});
}

void convert_reshape(NodeContext& n) {
  std::vector<int64_t> target = n.opset() < 5 ? n.attr_ints("shape") : n.require_ints(1, "shape");
  const Shape& in = n.desc(0).shape;
  bool allow_zero = n.attr_int("allowzero", 0) != 0;
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] == 0 && !allow_zero) {
      if (i >= in.size())
        n.fail("shape entry " + std::to_string(i) + " is 0 (copy) but the input has rank " +
               std::to_string(in.size()));
      target[i] = in[i];
    }
  n.set_output(0, n.call("reshape", {n.input(0)}, {{"newshape", target}}));
}

void convert_flatten(NodeContext& n) {
  int64_t r = n.rank(0);
  int64_t axis = n.attr_int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) n.fail("axis " + std::to_string(n.attr_int("axis", 1)) + " is out of range");
  const Shape& s = n.desc(0).shape;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i)];
  n.set_output(0, reshape(n, n.input(0), {outer, inner}));
}

void convert_transpose(NodeContext& n) {
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = n.rank(0) - 1; i >= 0; --i) perm.push_back(i);
  n.set_output(0, n.call("permute_dims", {n.input(0)}, {{"axes", perm}}));
}

void convert_concat(NodeContext& n) {
  std::vector<Expr> args;
  for (size_t i = 0; i < n.num_inputs(); ++i)
    if (n.has_input(i)) args.push_back(n.input(i));
  int64_t axis = normalize_axis(n.attr_int("axis", 0), n.rank(0), n);
  if (args.size() == 1) {
    n.set_output(0, args[0]);
    return;
  }
  n.set_output(0, n.call("concat", args, {{"axis", axis}}));
}

void convert_split(NodeContext& n) {
  int64_t axis = normalize_axis(n.attr_int("axis", 0), n.rank(0), n);
  int64_t dim = n.desc(0).shape[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (n.opset() < 13)
    sizes = n.attr_ints("split");
  else if (n.has_input(1))
    sizes = n.require_ints(1, "split");
  int64_t parts = static_cast<int64_t>(n.num_outputs());
  if (sizes.empty()) {
    if (n.opset() >= 18 && n.has_attr("num_outputs")) parts = n.attr_int("num_outputs", parts);
    if (parts <= 0) n.fail("cannot split into " + std::to_string(parts) + " parts");
    // Opset 18: the last part may be smaller (ceil division).
    int64_t each = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - i * each)));
  }
  if (sizes.size() == 1) {
    n.set_output(0, n.input(0));
    return;
  }
  Expr t = n.call("split", {n.input(0)}, {{"axis", axis}, {"sizes", sizes}});
  for (size_t i = 0; i < sizes.size(); ++i)
    n.set_output(i, n.builder().tuple_item(t, static_cast<int64_t>(i)));
}

void convert_slice(NodeContext& n) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    starts = n.require_ints(1, "starts");
    ends = n.require_ints(2, "ends");
    if (n.has_input(3)) axes = n.require_ints(3, "axes");
    if (n.has_input(4)) steps = n.require_ints(4, "steps");
  }
  if (starts.size() != ends.size()) n.fail("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts, ends, axes and steps must have the same length");
  for (auto& a : axes) a = normalize_axis(a, n.rank(0), n);
  for (int64_t s : steps)
    if (s == 0) n.fail("a step of 0 is not allowed");
  n.set_output(0, n.call("strided_slice", {n.input(0)},
                         {{"begin", starts}, {"end", ends}, {"strides", steps}, {"axes", axes}}));
}

std::vector<int64_t> axes_of(NodeContext& n, int64_t input_opset) {
  if (n.opset() < input_opset) return n.attr_ints("axes");
  if (n.has_input(1)) return n.require_ints(1, "axes");
  return {};
}

void convert_squeeze(NodeContext& n) {
  std::vector<int64_t> axes = axes_of(n, 13);
  const Shape& in = n.desc(0).shape;
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t k = normalize_axis(a, n.rank(0), n);
      if (in[static_cast<size_t>(k)] != 1)
        n.fail("cannot squeeze axis " + std::to_string(a) + " of size " +
               std::to_string(in[static_cast<size_t>(k)]));
      drop[static_cast<size_t>(k)] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  // reshape needs the actual extent of a bounded dynamic axis; squeeze keeps it.
  if (n.desc(0).bounded_outer) {
    std::vector<int64_t> dropped;
    for (size_t i = 0; i < in.size(); ++i)
      if (drop[i]) dropped.push_back(static_cast<int64_t>(i));
    n.set_output(0, dropped.empty() ? n.input(0) : n.call("squeeze", {n.input(0)}, {{"axis", dropped}}));
    return;
  }
  n.set_output(0, reshape(n, n.input(0), out));
}

void convert_unsqueeze(NodeContext& n) {
  std::vector<int64_t> axes = axes_of(n, 13);
  const Shape& in = n.desc(0).shape;
  int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    int64_t k = normalize_axis(a, out_rank, n);
    if (is_new[static_cast<size_t>(k)]) n.fail("axis " + std::to_string(a) + " is repeated");
    is_new[static_cast<size_t>(k)] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(is_new[static_cast<size_t>(i)] ? 1 : in[j++]);
  // A bounded dynamic axis: one expand_dims per new axis, in ascending order.
  if (n.desc(0).bounded_outer) {
    Expr x = n.input(0);
    for (int64_t i = 0; i < out_rank; ++i)
      if (is_new[static_cast<size_t>(i)]) x = n.call("expand_dims", {x}, {{"axis", i}});
    n.set_output(0, x);
    return;
  }
  n.set_output(0, reshape(n, n.input(0), out));
}

// Shape and Size fold to constants: refused for a value whose leading
// extent is known only at run time.
void refuse_bounded(NodeContext& n) {
  if (n.desc(0).bounded_outer)
    n.unsupported(
        "input 0 " + desc_str(n.desc(0)) +
        " has a bounded dynamic leading axis (its extent is known only at run time); kiln folds shapes "
        "at import");
}

void convert_shape(NodeContext& n) {
  refuse_bounded(n);
  const Shape& s = n.desc(0).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(s[static_cast<size_t>(i)]);
  n.set_output(0, n.constant_expr(ints_tensor(dims)));
}

void convert_size(NodeContext& n) {
  refuse_bounded(n);
  n.set_output(0, n.constant_expr(Tensor::from_ints({}, {shape_numel(n.desc(0).shape)})));
}

void convert_gather(NodeContext& n) {
  int64_t axis = normalize_axis(n.attr_int("axis", 0), n.rank(0), n);
  n.set_output(0, n.call("take", {n.input(0), n.input(1)}, {{"axis", axis}}));
}

void convert_gather_elements(NodeContext& n) {
  if (n.rank(0) == 0) n.fail("the data is a scalar; it needs rank >= 1");
  int64_t axis = normalize_axis(n.attr_int("axis", 0), n.rank(0), n);
  n.set_output(0, n.call("gather_elements", {n.input(0), n.input(1)}, {{"axis", axis}}));
}

// ReverseSequence reverses the first sequence_lens[b] steps along the time
// axis of each batch entry b: a gather_elements along the time axis whose
// index (t < len[b] ? len[b] - 1 - t : t) is built here, with extent 1 on the
// other axes, and broadcast to the data's shape. sequence_lens must be known
// at import.
void convert_reverse_sequence(NodeContext& n) {
  const int64_t r = n.rank(0);
  if (r < 2) n.fail("the data must have rank 2 or more (time and batch axes), got rank " + std::to_string(r));
  const int64_t time_axis = normalize_axis(n.attr_int("time_axis", 0), r, n);
  const int64_t batch_axis = normalize_axis(n.attr_int("batch_axis", 1), r, n);
  if (time_axis == batch_axis) n.fail("time_axis and batch_axis are both " + std::to_string(time_axis));
  const Shape& shape = n.desc(0).shape;
  const int64_t steps = shape[static_cast<size_t>(time_axis)];
  const int64_t batch = shape[static_cast<size_t>(batch_axis)];
  std::vector<int64_t> lens = n.require_ints(1, "sequence_lens");
  if (n.rank(1) != 1 || static_cast<int64_t>(lens.size()) != batch)
    n.fail("sequence_lens must have one length per batch entry (" + std::to_string(batch) + "), got " +
           std::to_string(lens.size()));
  Shape index_shape(static_cast<size_t>(r), 1);
  index_shape[static_cast<size_t>(time_axis)] = steps;
  index_shape[static_cast<size_t>(batch_axis)] = batch;
  std::vector<int64_t> index(static_cast<size_t>(steps * batch));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (len < 0 || len > steps)
      n.fail("sequence_lens[" + std::to_string(b) + "] is " + std::to_string(len) + "; it must be in [0, " +
             std::to_string(steps) + "] (the time axis' extent)");
    for (int64_t t = 0; t < steps; ++t) {
      // Row-major position of (t, b) in index_shape: the axis that comes
      // first varies slowest.
      size_t pos = static_cast<size_t>(time_axis < batch_axis ? t * batch + b : b * steps + t);
      index[pos] = t < len ? len - 1 - t : t;
    }
  }
  Expr idx = n.constant_expr(Tensor::from_ints(index_shape, index));
  if (index_shape != shape) idx = n.call("broadcast_to", {idx}, {{"shape", std::vector<int64_t>(shape)}});
  n.set_output(0, n.call("gather_elements", {n.input(0), idx}, {{"axis", time_axis}}));
}

void convert_gather_nd(NodeContext& n) {
  n.set_output(0,
               n.call("gather_nd", {n.input(0), n.input(1)}, {{"batch_dims", n.attr_int("batch_dims", 0)}}));
}

void convert_scatter_nd(NodeContext& n) {
  n.set_output(0, n.call("scatter_nd", {n.input(0), n.input(1), n.input(2)},
                         {{"reduction", n.attr_string("reduction", "none")}}));
}

// Also Scatter (opsets 9 and 10), ScatterElements under its old name.
void convert_scatter_elements(NodeContext& n) {
  if (n.rank(0) == 0) n.fail("the data is a scalar; it needs rank >= 1");
  int64_t axis = normalize_axis(n.attr_int("axis", 0), n.rank(0), n);
  n.set_output(0, n.call("scatter_elements", {n.input(0), n.input(1), n.input(2)},
                         {{"axis", axis}, {"reduction", n.attr_string("reduction", "none")}}));
}

void convert_trilu(NodeContext& n) {
  int64_t k = 0;
  if (n.has_input(1)) {
    std::vector<int64_t> ks = n.require_ints(1, "k");
    if (ks.size() != 1) n.fail("k must hold one value, got " + std::to_string(ks.size()));
    k = ks[0];
  }
  if (n.rank(0) < 2) n.fail("the input has rank " + std::to_string(n.rank(0)) + "; Trilu needs rank >= 2");
  n.set_output(0, n.call("trilu", {n.input(0)},
                         {{"k", k}, {"upper", n.attr_int("upper", 1) ? int64_t{1} : int64_t{0}}}));
}

void convert_one_hot(NodeContext& n) {
  Tensor depth_t = n.require_constant(1, "depth");
  Tensor values = n.require_constant(2, "values");
  if (depth_t.numel() != 1) n.fail("depth must hold one value, got " + std::to_string(depth_t.numel()));
  if (values.numel() != 2)
    n.fail("values must hold [off_value, on_value], got " + std::to_string(values.numel()) + " values");
  // A float depth is truncated to an integer, like ONNX's reference.
  int64_t depth = static_cast<int64_t>(depth_t.get_as_double(0));
  if (depth <= 0 || depth > kMaxFoldedElements) n.fail("depth " + std::to_string(depth) + " is out of range");
  int64_t r = n.rank(0);
  int64_t axis = n.attr_int("axis", -1);
  if (axis < -(r + 1) || axis > r)
    n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r + 1));
  if (axis < 0) axis += r + 1;
  // Indices of any numeric type are truncated to int64; -depth..-1 count from the end.
  Expr idx = n.input(0);
  if (idx->type->tensor.dtype != DType::Int64)
    idx = n.call("astype", {idx}, {{"dtype", std::string("int64")}});
  Expr wrapped = n.call("add", {idx, n.scalar(static_cast<double>(depth), DType::Int64)});
  idx = n.call("where", {n.call("less", {idx, n.scalar(0, DType::Int64)}), wrapped, idx});
  Shape with_axis = n.desc(0).shape, iota_shape(static_cast<size_t>(r + 1), 1);
  with_axis.insert(with_axis.begin() + axis, 1);
  iota_shape[static_cast<size_t>(axis)] = depth;
  std::vector<int64_t> iota(static_cast<size_t>(depth));
  for (int64_t i = 0; i < depth; ++i) iota[static_cast<size_t>(i)] = i;
  Expr hot = n.call("equal", {n.call("reshape", {idx}, {{"newshape", std::vector<int64_t>(with_axis)}}),
                              n.constant_expr(Tensor::from_ints(iota_shape, iota))});
  Expr off = n.scalar(values.get_as_double(0), values.dtype()),
       on = n.scalar(values.get_as_double(1), values.dtype());
  n.set_output(0, n.call("where", {hot, on, off}));
}

void convert_expand(NodeContext& n) {
  std::vector<int64_t> shape = n.require_ints(1, "shape");
  const Shape& in = n.desc(0).shape;
  // ONNX Expand broadcasts both ways: the result has the broadcast shape.
  size_t r = std::max(shape.size(), in.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t a = i + in.size() >= r ? in[i + in.size() - r] : 1;
    int64_t b = i + shape.size() >= r ? shape[i + shape.size() - r] : 1;
    if (a != b && a != 1 && b != 1)
      n.fail("shape " + shape_str(in) + " cannot be expanded to " + shape_str(Shape(shape)));
    out[i] = a == 1 ? b : a;
  }
  if (out == in) {
    n.set_output(0, n.input(0));
    return;
  }
  n.set_output(0, n.call("broadcast_to", {n.input(0)}, {{"shape", std::vector<int64_t>(out)}}));
}

void convert_tile(NodeContext& n) {
  std::vector<int64_t> repeats = n.require_ints(1, "repeats");
  if (static_cast<int64_t>(repeats.size()) != n.rank(0))
    n.fail("repeats has " + std::to_string(repeats.size()) + " entries for an input of rank " +
           std::to_string(n.rank(0)));
  // The result's size is checked before a copy is made (repeats of 2^31 would
  // otherwise ask for 2^31 concat operands).
  Shape out = n.desc(0).shape;
  for (size_t axis = 0; axis < repeats.size(); ++axis) {
    if (repeats[axis] < 0) n.fail("negative repeat " + std::to_string(repeats[axis]));
    if (__builtin_mul_overflow(out[axis], repeats[axis], &out[axis]))
      n.fail("repeats " + shape_str(Shape(repeats)) + " make a result with more than 2^63 elements");
  }
  checked_tensor_bytes(out, n.desc(0).dtype, "repeats " + shape_str(Shape(repeats)) + ": the result");
  Expr x = n.input(0);
  for (size_t axis = 0; axis < repeats.size(); ++axis) {
    if (repeats[axis] == 1) continue;
    if (repeats[axis] == 0) n.unsupported("a repeat of 0 (an empty result) is not supported");
    std::vector<Expr> copies(static_cast<size_t>(repeats[axis]), x);
    x = n.call("concat", copies, {{"axis", static_cast<int64_t>(axis)}});
  }
  n.set_output(0, x);
}

void convert_constant_of_shape(NodeContext& n) {
  std::vector<int64_t> shape = n.require_ints(0, "shape");
  std::optional<Tensor> value = n.attr_tensor("value");
  DType dtype = value ? value->dtype() : DType::Float32;
  double v = value && value->numel() > 0 ? value->get_as_double(0) : 0.0;
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) n.fail("negative dimension in shape " + shape_str(Shape(shape)));
    if (d > 0 && numel > kMaxFoldedElements / d)
      n.fail("the shape " + shape_str(Shape(shape)) + " is too large");
    numel *= d;
  }
  Tensor t = Tensor::zeros(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, v);
  n.set_output(0, n.constant_expr(t));
}

void convert_constant(NodeContext& n) {
  if (auto t = n.attr_tensor("value")) {
    n.set_output(0, n.constant_expr(*t));
  } else if (n.has_attr("value_float")) {
    n.set_output(
        0, n.constant_expr(Tensor::from_floats({}, {static_cast<float>(n.attr_float("value_float", 0))})));
  } else if (n.has_attr("value_floats")) {
    std::vector<float> v;
    for (double d : n.attr_floats("value_floats")) v.push_back(static_cast<float>(d));
    n.set_output(0, n.constant_expr(Tensor::from_floats({static_cast<int64_t>(v.size())}, v)));
  } else if (n.has_attr("value_int")) {
    n.set_output(0, n.constant_expr(Tensor::from_ints({}, {n.attr_int("value_int", 0)})));
  } else if (n.has_attr("value_ints")) {
    n.set_output(0, n.constant_expr(ints_tensor(n.attr_ints("value_ints"))));
  } else {
    n.unsupported("only the value, value_float(s) and value_int(s) forms of Constant are supported");
  }
}

void convert_range(NodeContext& n) {
  Tensor start = n.require_constant(0, "start"), limit = n.require_constant(1, "limit"),
         delta = n.require_constant(2, "delta");
  double s = start.get_as_double(0), l = limit.get_as_double(0), d = delta.get_as_double(0);
  if (d == 0) n.fail("delta is 0");
  double count = std::ceil((l - s) / d);
  int64_t len = count > 0 ? static_cast<int64_t>(count) : 0;
  if (len > kMaxFoldedElements) n.fail("the range has too many elements");
  Tensor t = Tensor::zeros({len}, start.dtype());
  for (int64_t i = 0; i < len; ++i) {
    // Integer ranges must be exact for large values, so add in integers.
    if (is_integer(start.dtype()))
      t.set_from_double(i, static_cast<double>(static_cast<int64_t>(s) + i * static_cast<int64_t>(d)));
    else if (start.dtype() == DType::Float64)
      t.set_from_double(i, s + static_cast<double>(i) * d);
    else
      t.set_from_double(i, static_cast<float>(s) + static_cast<float>(i) * static_cast<float>(d));
  }
  n.set_output(0, n.constant_expr(t));
}

void convert_eye_like(NodeContext& n) {
  if (n.rank(0) != 2) n.fail("the input has rank " + std::to_string(n.rank(0)) + "; EyeLike needs rank 2");
  DType t = n.desc(0).dtype;
  if (n.has_attr("dtype")) {
    int32_t onnx_type = static_cast<int32_t>(n.attr_int("dtype", 0));
    auto d = dtype_from_onnx(onnx_type);
    if (!d) n.unsupported("dtype " + onnx_type_name(onnx_type) + " is not supported");
    t = *d;
  }
  int64_t k = n.attr_int("k", 0);
  const Shape& s = n.desc(0).shape;
  // Only the input's shape matters, so the result is a constant.
  Tensor eye = Tensor::zeros(s, t);
  for (int64_t i = 0; i < s[0]; ++i)
    if (i + k >= 0 && i + k < s[1]) eye.set_from_double(i * s[1] + i + k, 1.0);
  n.set_output(0, n.constant_expr(eye));
}

void convert_where(NodeContext& n) { n.set_output(0, n.call("where", {n.input(0), n.input(1), n.input(2)})); }

void convert_pad(NodeContext& n) {
  std::vector<int64_t> pads;
  double value = 0.0;
  std::string mode = n.attr_string("mode", "constant");
  if (n.opset() < 11) {
    pads = n.attr_ints(n.opset() < 2 ? "paddings" : "pads");
    value = n.attr_float("value", 0.0);
  } else {
    pads = n.require_ints(1, "pads");
    if (n.has_input(2)) value = n.require_constant(2, "constant_value").get_as_double(0);
  }
  int64_t r = n.rank(0);
  std::vector<int64_t> axes;
  if (n.opset() >= 18 && n.has_input(3))
    axes = n.require_ints(3, "axes");
  else
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    n.fail("pads has " + std::to_string(pads.size()) + " entries; expected " +
           std::to_string(2 * axes.size()));
  std::vector<int64_t> width(static_cast<size_t>(2 * r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(axes[i], r, n);
    width[static_cast<size_t>(2 * a)] = pads[i];
    width[static_cast<size_t>(2 * a + 1)] = pads[i + axes.size()];
  }
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    n.unsupported("pad mode '" + mode + "' is not supported");
  n.set_output(0,
               n.call("nn.pad", {n.input(0)}, {{"pad_width", width}, {"pad_value", value}, {"mode", mode}}));
}

// DepthToSpace / SpaceToDepth: one reshape, one permutation, one reshape.
void convert_depth_to_space(NodeContext& n) {
  if (n.rank(0) != 4) n.unsupported("only 4-D inputs are supported");
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) n.fail("blocksize must be positive");
  const Shape& s = n.desc(0).shape;
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  if (C % (b * b)) n.fail("channels " + std::to_string(C) + " are not divisible by blocksize^2");
  bool crd = n.attr_string("mode", "DCR") == "CRD";
  Expr x = crd ? reshape(n, n.input(0), {N, C / (b * b), b, b, H, W})
               : reshape(n, n.input(0), {N, b, b, C / (b * b), H, W});
  std::vector<int64_t> perm =
      crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  x = n.call("permute_dims", {x}, {{"axes", perm}});
  n.set_output(0, reshape(n, x, {N, C / (b * b), H * b, W * b}));
}

void convert_space_to_depth(NodeContext& n) {
  if (n.rank(0) != 4) n.unsupported("only 4-D inputs are supported");
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) n.fail("blocksize must be positive");
  const Shape& s = n.desc(0).shape;
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  if (H % b || W % b) n.fail("spatial size is not divisible by blocksize");
  Expr x = reshape(n, n.input(0), {N, C, H / b, b, W / b, b});
  x = n.call("permute_dims", {x}, {{"axes", std::vector<int64_t>{0, 3, 5, 1, 2, 4}}});
  n.set_output(0, reshape(n, x, {N, C * b * b, H / b, W / b}));
}

}  // namespace

void add_shape_converters(ConverterTable& t) {
  t["Reshape"] = {convert_reshape, {"reshape"}};
  t["Flatten"] = {convert_flatten, {"reshape"}};
  t["Transpose"] = {convert_transpose, {"permute_dims"}};
  t["Concat"] = {convert_concat, {"concat"}};
  t["Split"] = {convert_split, {"split"}};
  t["Slice"] = {convert_slice, {"strided_slice"}};
  t["Squeeze"] = {convert_squeeze, {"reshape"}};
  t["Unsqueeze"] = {convert_unsqueeze, {"reshape"}};
  t["Shape"] = {convert_shape, {}};
  t["Size"] = {convert_size, {}};
  t["Gather"] = {convert_gather, {"take"}};
  t["GatherElements"] = {convert_gather_elements, {"gather_elements"}, 11};
  t["ReverseSequence"] = {convert_reverse_sequence, {"gather_elements", "broadcast_to"}, 10};
  t["GatherND"] = {convert_gather_nd, {"gather_nd"}, 11};
  t["ScatterND"] = {convert_scatter_nd, {"scatter_nd"}, 11};
  t["ScatterElements"] = {convert_scatter_elements, {"scatter_elements"}, 11};
  t["Scatter"] = {convert_scatter_elements, {"scatter_elements"}, 9};
  t["Expand"] = {convert_expand, {"broadcast_to"}};
  t["Tile"] = {convert_tile, {"concat"}};
  t["ConstantOfShape"] = {convert_constant_of_shape, {}};
  t["Constant"] = {convert_constant, {}};
  t["Range"] = {convert_range, {}};
  t["EyeLike"] = {convert_eye_like, {}, 9};
  t["Where"] = {convert_where, {"where"}};
  t["Trilu"] = {convert_trilu, {"trilu"}, 14};
  t["OneHot"] = {convert_one_hot, {"astype", "add", "less", "where", "reshape", "equal"}, 9};
  t["Pad"] = {convert_pad, {"nn.pad"}};
  t["DepthToSpace"] = {convert_depth_to_space, {"reshape", "permute_dims"}};
  t["SpaceToDepth"] = {convert_space_to_depth, {"reshape", "permute_dims"}};
}

}  // namespace kiln::onnx_import
