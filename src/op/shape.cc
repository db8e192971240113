// Shape ops: reshape, permute_dims, concat, split, flatten, squeeze,
// expand_dims (this file), strided_slice, broadcast_to, take,
// gather_elements, where, trilu (shape_index.cc) and gather_nd, scatter_nd,
// scatter_elements (scatter.cc). All of them work on every dtype.
//
// reshape(newshape): at most one -1, inferred from the element count; other
//   values must be >= 0 and the element count must match.
// permute_dims(axes=[]): out axis i is input axis axes[i]; [] reverses.
// concat(x0, x1, ...; axis=0): same rank and dtype, equal dims except `axis`.
// split(x; axis=0, sections=0, sizes=[]): exactly one of sections (> 0 equal
//   parts, which must divide the axis) or sizes (non-negative, summing to the
//   axis size); the result is always a tuple.
// flatten(axis=1): a 2-D result (prod dims[:axis], prod dims[axis:]) like ONNX
//   Flatten; axis in [-rank, rank].
// squeeze(axis=[]): drops the listed size-1 axes ([] = every size-1 axis);
//   listing an axis of another size is an error.
// expand_dims(axis, num_newaxis=1): inserts num_newaxis size-1 axes before
//   position `axis` of the result, axis in [-rank-1, rank].
// Negative axes count from the end everywhere.
#include <cstring>
#include <vector>

#include "op/nn_internal.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

// Ops whose output is the input's bytes under another shape.
void copy_bytes_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  if (in[0].nbytes()) std::memcpy(out[0].raw(), in[0].raw(), in[0].nbytes());
}

// ---- reshape --------------------------------------------------------------

std::vector<TensorDesc> infer_reshape(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "reshape";
  const std::vector<int64_t>& ns = attrs.get_ints("newshape");
  Shape out = ns;
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] == -1) {
      if (infer_at >= 0)
        throw Error(op + ": attribute 'newshape' = " + attr_value_str(ns) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (ns[i] < 0)
      throw Error(op + ": attribute 'newshape' = " + attr_value_str(ns) + " has the negative value " +
                  std::to_string(ns[i]) + " (only -1 is allowed, once)");
    known *= ns[i];
  }
  int64_t numel = shape_numel(in[0].shape);
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      throw Error(op + ": cannot infer the -1 in newshape " + attr_value_str(ns) + " for data " +
                  shape_str(in[0].shape) + " of " + std::to_string(numel) + " elements");
    out[static_cast<size_t>(infer_at)] = numel / known;
  } else if (known != numel) {
    throw Error(op + ": newshape " + attr_value_str(ns) + " has " + std::to_string(known) +
                " elements but data " + shape_str(in[0].shape) + " has " + std::to_string(numel));
  }
  return {{out, in[0].dtype}};
}

// ---- permute_dims ---------------------------------------------------------

std::vector<int64_t> permutation(const Shape& shape, const Attrs& attrs) {
  const std::string op = "permute_dims";
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t>& axes = attrs.get_ints("axes");
  std::vector<int64_t> perm;
  if (axes.empty()) {
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
    return perm;
  }
  if (static_cast<int64_t>(axes.size()) != rank)
    throw Error(op + ": attribute 'axes' = " + attr_value_str(axes) + " must list all " +
                std::to_string(rank) + " axes of data " + shape_str(shape));
  for (int64_t a : axes) perm.push_back(normalize_axis(op, a, rank, "attribute 'axes'"));
  normalize_axes(op, axes, rank, "attribute 'axes'");  // rejects repeats
  return perm;
}

std::vector<TensorDesc> infer_permute_dims(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  std::vector<int64_t> perm = permutation(in[0].shape, attrs);
  Shape out;
  for (int64_t a : perm) out.push_back(in[0].shape[static_cast<size_t>(a)]);
  return {{out, in[0].dtype}};
}

void permute_dims_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  std::vector<int64_t> perm = permutation(in[0].shape(), attrs);
  std::vector<int64_t> in_strides = contiguous_strides(in[0].shape());
  std::vector<int64_t> strides;
  for (int64_t a : perm) strides.push_back(in_strides[static_cast<size_t>(a)]);
  copy_strided(in[0], 0, strides, out[0]);
}

// ---- concat ---------------------------------------------------------------

std::vector<TensorDesc> infer_concat(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "concat";
  const TensorDesc& first = in[0];
  if (first.shape.empty()) throw Error(op + ": input 0 is a scalar; concat needs rank >= 1");
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  const size_t axis = static_cast<size_t>(normalize_axis(op, attrs.get_int("axis"), rank));
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorDesc& t = in[i];
    if (t.dtype != first.dtype)
      throw Error(op + ": input " + std::to_string(i) + " has dtype " + std::string(dtype_name(t.dtype)) +
                  " but input 0 has dtype " + std::string(dtype_name(first.dtype)));
    bool same = static_cast<int64_t>(t.shape.size()) == rank;
    for (size_t a = 0; same && a < t.shape.size(); ++a) same = a == axis || t.shape[a] == first.shape[a];
    if (!same)
      throw Error(op + ": input " + std::to_string(i) + " has shape " + shape_str(t.shape) +
                  " but input 0 has shape " + shape_str(first.shape) + "; all dims except axis " +
                  std::to_string(axis) + " must match");
    out[axis] += t.shape[axis];
  }
  return {{out, first.dtype}};
}

void concat_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& y = out[0];
  const int64_t axis = normalize_axis("concat", attrs.get_int("axis"), y.ndim());
  const int64_t esz = dtype_bytes(y.dtype());
  AxisSplit s = split_at_axis(y.shape(), axis);
  char* dst = static_cast<char*>(out[0].raw());
  for (int64_t o = 0; o < s.outer; ++o)
    for (const Tensor& t : in) {
      int64_t chunk = t.dim(axis) * s.inner * esz;
      if (chunk) std::memcpy(dst, static_cast<const char*>(t.raw()) + o * chunk, static_cast<size_t>(chunk));
      dst += chunk;
    }
}

// ---- split ----------------------------------------------------------------

// Sizes of the parts along the split axis.
std::vector<int64_t> split_sizes(const Shape& shape, int64_t axis, const Attrs& attrs) {
  const std::string op = "split";
  int64_t sections = attrs.get_int("sections");
  const std::vector<int64_t>& sizes = attrs.get_ints("sizes");
  int64_t d = shape[static_cast<size_t>(axis)];
  if ((sections != 0) == !sizes.empty())
    throw Error(op +
                ": give exactly one of attribute 'sections' (equal parts) or 'sizes' "
                "(the size of each part)");
  if (!sizes.empty()) {
    int64_t sum = 0;
    for (int64_t v : sizes) {
      if (v < 0) throw Error(op + ": attribute 'sizes' = " + attr_value_str(sizes) + " has a negative size");
      sum += v;
    }
    if (sum != d)
      throw Error(op + ": attribute 'sizes' = " + attr_value_str(sizes) + " sums to " + std::to_string(sum) +
                  " but axis " + std::to_string(axis) + " of data " + shape_str(shape) + " has size " +
                  std::to_string(d));
    return sizes;
  }
  if (sections < 0) throw Error(op + ": attribute 'sections' = " + std::to_string(sections) + " must be > 0");
  if (d % sections != 0)
    throw Error(op + ": attribute 'sections' = " + std::to_string(sections) + " does not divide axis " +
                std::to_string(axis) + " of size " + std::to_string(d));
  return std::vector<int64_t>(static_cast<size_t>(sections), d / sections);
}

std::vector<TensorDesc> infer_split(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const TensorDesc& x = in[0];
  if (x.shape.empty()) throw Error("split: data is a scalar; split needs rank >= 1");
  int64_t axis = normalize_axis("split", attrs.get_int("axis"), static_cast<int64_t>(x.shape.size()));
  std::vector<TensorDesc> outs;
  for (int64_t n : split_sizes(x.shape, axis, attrs)) {
    Shape s = x.shape;
    s[static_cast<size_t>(axis)] = n;
    outs.push_back({s, x.dtype});
  }
  return outs;
}

void split_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const int64_t axis = normalize_axis("split", attrs.get_int("axis"), x.ndim());
  const int64_t esz = dtype_bytes(x.dtype());
  AxisSplit s = split_at_axis(x.shape(), axis);
  const char* src = static_cast<const char*>(x.raw());
  for (int64_t o = 0; o < s.outer; ++o)
    for (Tensor& t : out) {
      int64_t chunk = t.dim(axis) * s.inner * esz;
      if (chunk) std::memcpy(static_cast<char*>(t.raw()) + o * chunk, src, static_cast<size_t>(chunk));
      src += chunk;
    }
}

// ---- flatten, squeeze, expand_dims ----------------------------------------

std::vector<TensorDesc> infer_flatten(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = attrs.get_int("axis");
  if (axis < -rank || axis > rank)
    throw Error("flatten: attribute 'axis' = " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank) + " (expected " + std::to_string(-rank) + ".." + std::to_string(rank) +
                ")");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i)];
  return {{{outer, inner}, in[0].dtype}};
}

std::vector<TensorDesc> infer_squeeze(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  const std::vector<int64_t>& given = attrs.get_ints("axis");
  std::vector<bool> drop(s.size(), false);
  if (given.empty()) {
    for (size_t i = 0; i < s.size(); ++i) drop[i] = s[i] == 1;
  } else {
    for (int64_t a : normalize_axes("squeeze", given, rank)) {
      if (s[static_cast<size_t>(a)] != 1)
        throw Error("squeeze: axis " + std::to_string(a) + " of data " + shape_str(s) + " has size " +
                    std::to_string(s[static_cast<size_t>(a)]) + "; only size-1 axes can be squeezed");
      drop[static_cast<size_t>(a)] = true;
    }
  }
  // A bounded dynamic leading axis stays: only other axes, named, may go
  // (without names, an actual extent of 1 would drop it at run time).
  if (in[0].bounded_outer && (given.empty() || drop[0]))
    throw Error("squeeze: data " + desc_str(in[0]) +
                " has a bounded dynamic leading axis; name the other size-1 axes to squeeze in 'axis'");
  Shape out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!drop[i]) out.push_back(s[i]);
  return {{out, in[0].dtype, in[0].bounded_outer}};
}

std::vector<TensorDesc> infer_expand_dims(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t num = attrs.get_int("num_newaxis");
  if (num < 0) throw Error("expand_dims: attribute 'num_newaxis' = " + std::to_string(num) + " must be >= 0");
  int64_t axis = normalize_axis("expand_dims", attrs.get_int("axis"), rank + 1);
  if (in[0].bounded_outer && axis == 0 && num > 0)
    throw Error("expand_dims: data " + desc_str(in[0]) +
                " has a bounded dynamic leading axis, which must stay leading; insert axes at axis >= 1");
  Shape out(s.begin(), s.begin() + axis);
  out.insert(out.end(), static_cast<size_t>(num), 1);
  out.insert(out.end(), s.begin() + axis, s.end());
  return {{out, in[0].dtype, in[0].bounded_outer}};
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add({"reshape",
         "same elements under a new shape (one -1 is inferred)",
         1,
         1,
         {{"newshape", AttrKind::Ints, std::nullopt}},
         false,
         infer_reshape,
         copy_bytes_kernel});
  r.add({"permute_dims",
         "reorders the axes (default: reverses them)",
         1,
         1,
         {{"axes", AttrKind::Ints, std::vector<int64_t>{}}},
         false,
         infer_permute_dims,
         permute_dims_kernel});
  r.add({"concat",
         "joins tensors along one axis",
         1,
         -1,
         {{"axis", AttrKind::Int, int64_t{0}}},
         false,
         infer_concat,
         concat_kernel});
  r.add({"split",
         "splits a tensor along one axis into equal sections or given sizes",
         1,
         1,
         {{"axis", AttrKind::Int, int64_t{0}},
          {"sections", AttrKind::Int, int64_t{0}},
          {"sizes", AttrKind::Ints, std::vector<int64_t>{}}},
         true,
         infer_split,
         split_kernel});
  r.add({"flatten",
         "2-D view (prod of dims before axis, prod of the rest)",
         1,
         1,
         {{"axis", AttrKind::Int, int64_t{1}}},
         false,
         infer_flatten,
         copy_bytes_kernel});
  r.add({"squeeze",
         "drops size-1 axes",
         1,
         1,
         {{"axis", AttrKind::Ints, std::vector<int64_t>{}}},
         false,
         infer_squeeze,
         copy_bytes_kernel,
         DynamicInputs::Custom});
  r.add({"expand_dims",
         "inserts size-1 axes",
         1,
         1,
         {{"axis", AttrKind::Int, std::nullopt}, {"num_newaxis", AttrKind::Int, int64_t{1}}},
         false,
         infer_expand_dims,
         copy_bytes_kernel,
         DynamicInputs::Custom});
  register_shape_index_ops(r);
  register_scatter_ops(r);
}

}  // namespace kiln
