// Bitwise ops on unsigned integers: bitshift (ONNX BitShift).
//
// Semantics: bitshift(x, s) takes two inputs of one unsigned dtype (uint8,
// uint16, uint32, uint64), broadcasts them like numpy and shifts x by s bits
// to the left or right (attribute 'direction' = "left" or "right"). Bits
// shifted out are lost; a shift by the type's width or more gives 0 (C++
// leaves that undefined, ONNX does not say; 0 is what the shift means).
#include <string>
#include <type_traits>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kUnsigned = {DType::UInt8, DType::UInt16, DType::UInt32,
                                                    DType::UInt64};

bool shifts_left(const std::string& direction) {
  if (direction == "left") return true;
  if (direction == "right") return false;
  throw Error("bitshift: attribute 'direction' = \"" + direction +
              "\" is not supported (expected \"left\" or \"right\")");
}

std::vector<TensorDesc> bitshift_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  const std::string op = "bitshift";
  shifts_left(attrs.get_string("direction"));
  if (in[0].dtype != in[1].dtype)
    throw Error(op + ": inputs have different dtypes " + std::string(dtype_name(in[0].dtype)) + " and " +
                std::string(dtype_name(in[1].dtype)) + "; insert an astype to match them");
  require_dtype(op, "input 0", in[0].dtype, kUnsigned);
  return {{broadcast_shapes(op, in[0].shape, in[1].shape), in[0].dtype}};
}

template <typename T>
T shift(T x, T s, bool left) {
  if (s >= sizeof(T) * 8) return 0;
  return static_cast<T>(left ? x << s : x >> s);
}

void bitshift_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  Tensor& y = out[0];
  bool left = shifts_left(attrs.get_string("direction"));
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::storage;
    if constexpr (std::is_unsigned_v<S> && !std::is_same_v<typename decltype(tag)::compute, bool> &&
                  std::is_same_v<S, typename decltype(tag)::compute>) {
      const S* pa = a.data<S>();
      const S* pb = b.data<S>();
      S* py = y.data<S>();
      std::array<std::vector<int64_t>, 2> strides{broadcast_strides(a.shape(), y.shape()),
                                                  broadcast_strides(b.shape(), y.shape())};
      for_each_row<2>(y.shape(), strides,
                      [&](int64_t o, std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
                        for (int64_t i = 0; i < n; ++i)
                          py[o + i] = shift<S>(pa[off[0] + i * st[0]], pb[off[1] + i * st[1]], left);
                      });
    } else {
      KILN_ASSERT(false, "bitshift dtype passed inference");
    }
  });
}

}  // namespace

void register_bitwise_ops(OpRegistry& r) {
  OpDef d;
  d.name = "bitshift";
  d.summary = "x shifted left or right by s bits (unsigned integers; numpy broadcasting)";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"direction", AttrKind::String, std::nullopt}};
  d.infer = bitshift_infer;
  d.kernel = bitshift_kernel;
  r.add(std::move(d));
}

}  // namespace kiln
