// Comparisons and boolean logic: the ops that produce or consume bool masks
// (for where, masking in attention, Hardmax, IsNaN/IsInf decompositions).
//
// Semantics:
// - equal, not_equal, less, less_equal, greater, greater_equal take two
//   inputs of one dtype and broadcast like numpy; the result is bool.
//   Numeric dtypes compare by value (float16 as float); NaN compares false
//   with everything, also itself, so not_equal(NaN, NaN) is true (IEEE, like
//   numpy). equal and not_equal also take bool inputs; the orderings do not
//   (ONNX orders numbers only).
// - logical_and, logical_or, logical_xor: two bool inputs, numpy
//   broadcasting, bool result. logical_not: one bool input.
#include <type_traits>

#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kNumeric = kNumericDTypes;
constexpr std::initializer_list<DType> kNumericOrBool = {
    DType::Float32, DType::Float16, DType::Float64, DType::BFloat16, DType::Int8,
    DType::UInt8,   DType::Int16,   DType::UInt16,  DType::Int32,    DType::UInt32,
    DType::Int64,   DType::UInt64,  DType::Bool};

enum class CompareKind { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };

const char* compare_name(CompareKind k) {
  switch (k) {
    case CompareKind::Equal:
      return "equal";
    case CompareKind::NotEqual:
      return "not_equal";
    case CompareKind::Less:
      return "less";
    case CompareKind::LessEqual:
      return "less_equal";
    case CompareKind::Greater:
      return "greater";
    case CompareKind::GreaterEqual:
      return "greater_equal";
  }
  return "?";
}

template <CompareKind K, typename C>
bool apply_compare(C a, C b) {
  if constexpr (K == CompareKind::Equal) return a == b;
  if constexpr (K == CompareKind::NotEqual) return a != b;
  if constexpr (K == CompareKind::Less) return a < b;
  if constexpr (K == CompareKind::LessEqual) return a <= b;
  if constexpr (K == CompareKind::Greater) return a > b;
  if constexpr (K == CompareKind::GreaterEqual) return a >= b;
}

// Two same-dtype operands broadcast to y; y[i] = f(a, b) stored as bool.
template <typename S, typename F>
void broadcast_to_bool(const Tensor& a, const Tensor& b, Tensor& y, F f) {
  const S* pa = a.data<S>();
  const S* pb = b.data<S>();
  uint8_t* py = y.data<uint8_t>();
  std::array<std::vector<int64_t>, 2> strides{broadcast_strides(a.shape(), y.shape()),
                                              broadcast_strides(b.shape(), y.shape())};
  for_each_row<2>(y.shape(), strides,
                  [&](int64_t o, std::array<int64_t, 2> off, int64_t n, std::array<int64_t, 2> st) {
                    const S* ra = pa + off[0];
                    const S* rb = pb + off[1];
                    for (int64_t i = 0; i < n; ++i) py[o + i] = f(ra[i * st[0]], rb[i * st[1]]) ? 1 : 0;
                  });
}

template <CompareKind K>
std::vector<TensorDesc> compare_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  std::string op = compare_name(K);
  if (in[0].dtype != in[1].dtype)
    throw Error(op + ": inputs have different dtypes " + std::string(dtype_name(in[0].dtype)) + " and " +
                std::string(dtype_name(in[1].dtype)) + "; insert an astype to match them");
  constexpr bool kOrdering = K != CompareKind::Equal && K != CompareKind::NotEqual;
  require_dtype(op, "input 0", in[0].dtype, kOrdering ? kNumeric : kNumericOrBool);
  return {{broadcast_shapes(op, in[0].shape, in[1].shape), DType::Bool}};
}

template <CompareKind K>
void compare_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Tag::storage;
    using C = typename Tag::compute;
    broadcast_to_bool<S>(in[0], in[1], out[0],
                         [](S x, S z) { return apply_compare<K, C>(Tag::load(x), Tag::load(z)); });
  });
}

// ---- logical --------------------------------------------------------------

enum class LogicKind { And, Or, Xor };

const char* logic_name(LogicKind k) {
  switch (k) {
    case LogicKind::And:
      return "logical_and";
    case LogicKind::Or:
      return "logical_or";
    case LogicKind::Xor:
      return "logical_xor";
  }
  return "?";
}

template <LogicKind K>
std::vector<TensorDesc> logic_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  std::string op = logic_name(K);
  require_dtype(op, "input 0", in[0].dtype, {DType::Bool});
  require_dtype(op, "input 1", in[1].dtype, {DType::Bool});
  return {{broadcast_shapes(op, in[0].shape, in[1].shape), DType::Bool}};
}

template <LogicKind K>
void logic_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  broadcast_to_bool<uint8_t>(in[0], in[1], out[0], [](uint8_t x, uint8_t z) {
    bool a = x != 0, b = z != 0;
    if constexpr (K == LogicKind::And) return a && b;
    if constexpr (K == LogicKind::Or) return a || b;
    if constexpr (K == LogicKind::Xor) return a != b;
  });
}

// A two-input op with a bool result (comparisons and logic).
void add_bool_binary(OpRegistry& r, const char* name, const char* summary, InferFn infer, KernelFn kernel) {
  OpDef d;
  d.name = name;
  d.summary = summary;
  d.min_inputs = d.max_inputs = 2;
  d.infer = infer;
  d.kernel = kernel;
  r.add(std::move(d));
}

template <CompareKind K>
void add_compare(OpRegistry& r, const char* summary) {
  add_bool_binary(r, compare_name(K), summary, compare_infer<K>, compare_kernel<K>);
}

template <LogicKind K>
void add_logic(OpRegistry& r, const char* summary) {
  add_bool_binary(r, logic_name(K), summary, logic_infer<K>, logic_kernel<K>);
}

std::vector<TensorDesc> logical_not_infer(const std::vector<TensorDesc>& in, const Attrs&) {
  require_dtype("logical_not", "input x", in[0].dtype, {DType::Bool});
  return {in[0]};
}

void logical_not_kernel(const std::vector<Tensor>& in, const Attrs&, std::vector<Tensor>& out) {
  const uint8_t* px = in[0].data<uint8_t>();
  uint8_t* py = out[0].data<uint8_t>();
  for (int64_t i = 0, n = in[0].numel(); i < n; ++i) py[i] = px[i] ? 0 : 1;
}

}  // namespace

void register_logic_ops(OpRegistry& r) {
  add_compare<CompareKind::Equal>(r, "a == b as bool, numpy broadcasting; NaN is unequal to everything");
  add_compare<CompareKind::NotEqual>(r, "a != b as bool, numpy broadcasting; true where either is NaN");
  add_compare<CompareKind::Less>(r, "a < b as bool, numpy broadcasting");
  add_compare<CompareKind::LessEqual>(r, "a <= b as bool, numpy broadcasting");
  add_compare<CompareKind::Greater>(r, "a > b as bool, numpy broadcasting");
  add_compare<CompareKind::GreaterEqual>(r, "a >= b as bool, numpy broadcasting");
  add_logic<LogicKind::And>(r, "a and b on bools, numpy broadcasting");
  add_logic<LogicKind::Or>(r, "a or b on bools, numpy broadcasting");
  add_logic<LogicKind::Xor>(r, "a xor b on bools, numpy broadcasting");
  OpDef d;
  d.name = "logical_not";
  d.summary = "not x on bools";
  d.infer = logical_not_infer;
  d.kernel = logical_not_kernel;
  r.add(std::move(d));
}

}  // namespace kiln
