// Helpers shared by the nn.* and shape ops (nn*.cc, shape*.cc): attribute
// parsing for window ops, accumulation dtypes, and loading tensors into a
// plain accumulator buffer.
//
// The nn kernels compute in one of two accumulator types: float (float32 and
// float16 inputs; float16 is widened on load and rounded once at the end) or
// int32 (int8 and uint8 inputs). Loading everything into the accumulator type
// first keeps each kernel a single, simple loop nest that the compiler
// vectorises, instead of a template instance per input dtype pair.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "op/kernel_util.h"
#include "op/op.h"

namespace kiln {

// Registration of the nn sub-files, called from register_nn_ops in nn.cc.
void register_nn_conv_ops(OpRegistry& r);      // nn_conv.cc: conv2d, conv2d_transpose
void register_nn_blocked_ops(OpRegistry& r);   // nn_blocked.cc: channel-blocked (NCHWc) layouts and conv
void register_nn_pool_ops(OpRegistry& r);      // nn_pool.cc: max/avg/adaptive_avg pool
void register_nn_matmul_ops(OpRegistry& r);    // nn_matmul.cc: matmul, nn.dense
void register_nn_winograd_ops(OpRegistry& r);  // nn_winograd.cc: Winograd convs and their kernel transform
// Registration of the second and third shape files, called from register_shape_ops.
void register_shape_index_ops(OpRegistry& r);  // shape_index.cc: slicing, take, gather_elements, where, trilu
void register_scatter_ops(OpRegistry& r);      // scatter.cc: gather_nd, scatter_nd, scatter_elements

// ---- operands --------------------------------------------------------------

// Refuses an operand `what` of `op` that is not float32 (ops defined for
// the host's float32 kernels only: channel-blocked layouts, packed weights).
inline void require_float32(const std::string& op, const std::string& what, const TensorDesc& t) {
  if (t.dtype != DType::Float32)
    throw Error(op + ": " + what + " must be float32, got " + std::string(dtype_name(t.dtype)));
}

// Refuses an operand `what` of `op` whose rank is not `rank` (`layout` names
// its axes, e.g. "(N, C, H, W)").
inline void require_rank(const std::string& op, const std::string& what, const TensorDesc& t, size_t rank,
                         const char* layout) {
  if (t.shape.size() != rank)
    throw Error(op + ": " + what + " must be " + std::to_string(rank) + "-D " + layout + ", got shape " +
                shape_str(t.shape));
}

// Runs `plain_op`'s reference kernel on the unblocked forms of channel-blocked
// operands, data (N, C / c, H, W, c) or NCHW and a weight (O / ob, I / ib,
// KH, KW, ib, ob), and blocks its (N, O, OH, OW) result into out[0] (N,
// O / ob, OH, OW, ob): the blocked convs' kernels (nn_blocked.cc,
// nn_winograd.cc), computed as their definitions say.
void run_unblocked(const std::string& plain_op, const std::vector<Tensor>& in, const Attrs& attrs,
                   std::vector<Tensor>& out);

// ---- attributes -----------------------------------------------------------

// An ints attribute that must have exactly `n` values, each >= `min_value`.
inline std::vector<int64_t> ints_attr(const std::string& op, const Attrs& attrs, const std::string& name,
                                      size_t n, int64_t min_value) {
  const std::vector<int64_t>& v = attrs.get_ints(name);
  if (v.size() != n)
    throw Error(op + ": attribute '" + name + "' must have " + std::to_string(n) + " values, got " +
                attr_value_str(v));
  for (int64_t x : v)
    if (x < min_value)
      throw Error(op + ": attribute '" + name + "' = " + attr_value_str(v) + " has a value below " +
                  std::to_string(min_value));
  return v;
}

// Padding of a 2-D window: (top, left, bottom, right). The 2-element form
// [h, w] means symmetric padding.
struct Pad2d {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
};
inline Pad2d pad2d_attr(const std::string& op, const Attrs& attrs, const std::string& name = "padding") {
  const std::vector<int64_t>& v = attrs.get_ints(name);
  if (v.size() != 2 && v.size() != 4)
    throw Error(op + ": attribute '" + name +
                "' must have 2 values [h, w] or 4 values "
                "[top, left, bottom, right], got " +
                attr_value_str(v));
  for (int64_t x : v)
    if (x < 0)
      throw Error(op + ": attribute '" + name + "' = " + attr_value_str(v) +
                  " has a negative value; padding must be >= 0");
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  return {v[0], v[1], v[2], v[3]};
}

// ---- accumulation dtypes --------------------------------------------------

// Integer operands accumulate in int32: int8 and uint8, and int32 for
// operands that already had a zero point subtracted (ONNX ConvInteger,
// MatMulInteger and the QLinear ops shift 8-bit values into int32 first).
// int32 products and sums are meant for such shifted values: the caller
// keeps them within int32.
inline bool is_int_acc_input(DType t) { return t == DType::Int8 || t == DType::UInt8 || t == DType::Int32; }

// The operands an integer weight groups per int32 lane of its dot product
// (a packed product's rows, a blocked conv's input channels): four int8
// (byte dot products), two int16 (vpmaddwd's pairs); 0 for anything else.
inline int64_t dot_group(DType t) { return t == DType::Int8 ? 4 : t == DType::Int16 ? 2 : 0; }

// Checks that `a` and `b` (the two operands of conv/matmul/dense) can be
// multiplied: both float of one dtype, or both integers (int8, uint8 and
// int32 may mix).
inline void check_mul_operands(const std::string& op, const std::string& a_name, DType a,
                               const std::string& b_name, DType b) {
  require_dtype(op, a_name, a, {DType::Float32, DType::Float16, DType::Int8, DType::UInt8, DType::Int32});
  require_dtype(op, b_name, b, {DType::Float32, DType::Float16, DType::Int8, DType::UInt8, DType::Int32});
  if (is_int_acc_input(a) != is_int_acc_input(b) || (is_float(a) && a != b))
    throw Error(op + ": " + a_name + " has dtype " + std::string(dtype_name(a)) + " but " + b_name +
                " has dtype " + std::string(dtype_name(b)) +
                "; expected the same float dtype, or integers (int8, uint8, int32) for both");
}

// Resolves the 'out_dtype' attribute ("" = float32 -> float32, float16 ->
// float16, integers -> int32). Float inputs may produce float32 or float16;
// integer inputs int32 or int64.
inline DType resolve_out_dtype(const std::string& op, DType in, const Attrs& attrs) {
  const std::string& s = attrs.get_string("out_dtype");
  if (s.empty()) return is_int_acc_input(in) ? DType::Int32 : in;
  std::optional<DType> t = dtype_from_name(s);
  if (!t) throw Error(op + ": attribute 'out_dtype' = \"" + s + "\" is not a dtype");
  bool ok = is_int_acc_input(in) ? (*t == DType::Int32 || *t == DType::Int64)
                                 : (*t == DType::Float32 || *t == DType::Float16);
  if (!ok)
    throw Error(op + ": attribute 'out_dtype' = \"" + s + "\" is not allowed for " +
                std::string(dtype_name(in)) + " inputs (expected " +
                (is_int_acc_input(in) ? "int32 or int64" : "float32 or float16") + ")");
  return *t;
}

// A tensor's elements as the accumulator type Acc (float or int32_t). A
// float32 tensor read as float is used in place; anything else is converted
// once into an owned buffer.
template <typename Acc>
class AccBuffer {
 public:
  explicit AccBuffer(const Tensor& t) {
    if constexpr (std::is_same_v<Acc, float>) {
      if (t.dtype() == DType::Float32) {
        ptr_ = t.data<float>();
        return;
      }
    }
    owned_.resize(static_cast<size_t>(t.numel()));
    dispatch_dtype(t.dtype(), [&](auto tag) {
      using Tag = decltype(tag);
      const auto* src = t.data<typename Tag::storage>();
      for (size_t i = 0; i < owned_.size(); ++i) owned_[i] = static_cast<Acc>(Tag::load(src[i]));
    });
    ptr_ = owned_.data();
  }
  const Acc* data() const { return ptr_; }

 private:
  const Acc* ptr_ = nullptr;
  std::vector<Acc> owned_;
};

// Writes `n` accumulator values into `out` starting at element `offset`,
// converting to out's dtype (float16 rounds to nearest even).
template <typename Acc>
inline void store_acc(const Acc* src, int64_t n, Tensor& out, int64_t offset) {
  switch (out.dtype()) {
    case DType::Float32: {
      float* d = out.data<float>() + offset;
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(src[i]);
      return;
    }
    case DType::Float16: {
      uint16_t* d = out.data<uint16_t>() + offset;
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_half(static_cast<float>(src[i]));
      return;
    }
    case DType::Int32: {
      int32_t* d = out.data<int32_t>() + offset;
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<int32_t>(src[i]);
      return;
    }
    case DType::Int64: {
      int64_t* d = out.data<int64_t>() + offset;
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<int64_t>(src[i]);
      return;
    }
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
    case DType::Float64:
    case DType::Int16:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
    case DType::BFloat16:
      break;
  }
  KILN_ASSERT(false, "store_acc: unexpected output dtype " + std::string(dtype_name(out.dtype())));
}

// ---- data movement --------------------------------------------------------

// out[i0, i1, ...] = in[base + i0 * strides[0] + i1 * strides[1] + ...] for
// every index of out's shape; strides count elements and may be 0 (broadcast)
// or negative (reversed). Serves permute_dims, strided_slice and broadcast_to.
inline void copy_strided(const Tensor& in, int64_t base, const std::vector<int64_t>& strides, Tensor& out) {
  KILN_ASSERT(in.dtype() == out.dtype(), "copy_strided: dtypes differ");
  KILN_ASSERT(strides.size() == out.shape().size(), "copy_strided: one stride per output axis");
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::storage;
    const S* src = in.data<S>();
    S* dst = out.data<S>();
    for_each_row<1>(
        out.shape(), {strides},
        [&](int64_t out_off, std::array<int64_t, 1> offs, int64_t n, std::array<int64_t, 1> step) {
          const S* s = src + base + offs[0];
          S* d = dst + out_off;
          if (step[0] == 1) {
            std::copy_n(s, n, d);
            return;
          }
          for (int64_t i = 0; i < n; ++i) d[i] = s[i * step[0]];
        });
  });
}

// strided_slice: the (start, count, step) of every axis of data, numpy's
// slice.indices() on the listed axes (shape_index.cc; the lowering reads it too).
struct SliceAxis {
  int64_t start = 0, count = 0, step = 1;
};
std::vector<SliceAxis> slice_plan(const Shape& shape, const Attrs& attrs);

}  // namespace kiln
