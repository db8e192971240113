// nn.max_unpool: the partial inverse of max pooling with indices.
//
// nn.max_unpool(data, indices; output_shape) returns a tensor of shape
// output_shape (the full shape, N and C first, of the same rank as data)
// filled with zeros, except that out.flat[indices[i]] = data[i] for every
// element i: indices are flat positions in the whole output tensor, as
// nn.max_pool_with_indices (storage_order 0) produces them for its input.
// When two elements name one position the later one (in row-major order of
// data) wins. data and indices have one shape; indices are int64 (or int32);
// an index outside [0, numel(output)) is an error naming it. Any numeric
// dtype; pure data movement, so values are copied exactly.
#include <vector>

#include "op/nn_internal.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const char* kMaxUnpool = "nn.max_unpool";

std::vector<TensorDesc> infer_max_unpool(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = kMaxUnpool;
  const TensorDesc& x = in[0];
  const TensorDesc& idx = in[1];
  require_dtype(op, "data", x.dtype, kNumericDTypes);
  require_dtype(op, "indices", idx.dtype, {DType::Int64, DType::Int32});
  if (x.shape != idx.shape)
    throw Error(op + ": indices " + shape_str(idx.shape) + " must have the shape of data " +
                shape_str(x.shape));
  if (x.shape.size() < 3)
    throw Error(op + ": data must have rank 3 or more (N, C, spatial...), got shape " + shape_str(x.shape));
  Shape out = attrs.get_ints("output_shape");
  if (out.size() != x.shape.size() || out[0] != x.shape[0] || out[1] != x.shape[1])
    throw Error(op + ": attribute 'output_shape' = " + shape_str(out) + " must have the rank of data " +
                shape_str(x.shape) + " and its N and C");
  for (int64_t d : out)
    if (d < 1) throw Error(op + ": attribute 'output_shape' = " + shape_str(out) + " has an empty axis");
  return {{out, x.dtype}};
}

void max_unpool_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  Tensor& y = out[0];
  const int64_t size = y.numel();
  std::vector<int64_t> pos(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t p = idx.dtype() == DType::Int64 ? idx.data<int64_t>()[i] : idx.data<int32_t>()[i];
    if (p < 0 || p >= size)
      throw Error(std::string(kMaxUnpool) + ": index " + std::to_string(p) + " at flat position " +
                  std::to_string(i) + " is outside the output " + shape_str(y.shape()) + " (valid: 0 to " +
                  std::to_string(size - 1) + ")");
    pos[static_cast<size_t>(i)] = p;
  }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::storage;
    const S* src = x.data<S>();
    S* dst = y.data<S>();
    std::fill(dst, dst + size, S{});
    for (size_t i = 0; i < pos.size(); ++i) dst[pos[i]] = src[i];
  });
}

}  // namespace

void register_unpool_ops(OpRegistry& r) {
  r.add({kMaxUnpool,
         "scatters data into zeros of output_shape at the flat indices max pooling returned",
         2,
         2,
         {{"output_shape", AttrKind::Ints, std::nullopt}},
         false,
         infer_max_unpool,
         max_unpool_kernel});
}

}  // namespace kiln
