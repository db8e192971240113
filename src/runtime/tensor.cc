#include "kiln/runtime/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kiln/runtime/error.h"
#include "runtime/block_cache.h"
#include "runtime/file_io.h"

namespace kiln {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw Error("tensor shape " + shape_str(shape) + " has more elements than 64 bits count");
  return n;
}

uint64_t max_tensor_bytes() { return byte_limit_from_env("KILN_MAX_TENSOR_BYTES", uint64_t{16} << 30); }

int64_t checked_tensor_bytes(const Shape& shape, DType dtype, const std::string& what) {
  bool overflow = false, empty = false;
  int64_t n = dtype_bytes(dtype);
  for (int64_t d : shape) {
    KILN_CHECK(d >= 0, what, ": shape ", shape_str(shape), " has a negative dimension");
    empty |= d == 0;
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  // An empty tensor may still not hide a dimension beyond kiln's limit.
  if (empty) {
    check_shape_extent(shape, what);
    return 0;
  }
  uint64_t limit = max_tensor_bytes();
  std::string type = shape_str(shape) + " " + std::string(dtype_name(dtype));
  if (overflow)
    throw Error(what + ": " + type + " is more than 2^63 bytes, larger than the limit of " +
                bytes_str(limit) + " (KILN_MAX_TENSOR_BYTES)");
  if (static_cast<uint64_t>(n) > limit)
    throw Error(what + ": " + type + " is " + bytes_str(static_cast<uint64_t>(n)) +
                ", larger than the limit of " + bytes_str(limit) +
                " (set KILN_MAX_TENSOR_BYTES to raise it)");
  check_shape_extent(shape, what);  // reached only with a limit raised past 2^48 elements
  return n;
}

void check_shape_extent(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw Error(what + ": shape " + shape_str(shape) + " has a negative dimension " + std::to_string(d));
    if (d > kMaxShapeExtent)
      throw Error(what + ": shape " + shape_str(shape) + " has a dimension of " + std::to_string(d) +
                  ", more than kiln's limit of 2^48");
    if (d > 0 && n > kMaxShapeExtent / d)
      n = kMaxShapeExtent + 1;  // too many elements, unless another dimension is 0
    else
      n *= d;
  }
  if (n > kMaxShapeExtent)
    throw Error(what + ": shape " + shape_str(shape) + " has more than 2^48 elements, kiln's limit");
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

static void check_shape(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    KILN_CHECK(d >= 0, "tensor shape ", shape_str(shape), " has a negative dimension");
    KILN_CHECK(d == 0 || n <= std::numeric_limits<int64_t>::max() / d / 8, "tensor shape ", shape_str(shape),
               " is too large");
    n *= d;
  }
}

// Large tensors (a model's outputs) come from the block cache, so repeated
// runs reuse the memory instead of faulting in fresh pages.
static std::shared_ptr<void> allocate(size_t nbytes) {
  if (nbytes == 0) nbytes = 1;
  void* p = cached_alloc(nbytes, kTensorAlignment);
  if (!p) throw Error("out of memory allocating a tensor of " + std::to_string(nbytes) + " bytes");
  return std::shared_ptr<void>(p, [nbytes](void* q) { cached_free(q, nbytes, kTensorAlignment); });
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  checked_tensor_bytes(shape, dtype, "a tensor");
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = allocate(t.nbytes());
  t.data_ = t.storage_.get();
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype) {
  check_shape(shape);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = std::shared_ptr<void>(data, [](void*) {});
  t.data_ = data;
  return t;
}

Tensor Tensor::view(std::shared_ptr<const void> owner, void* data, const Shape& shape, DType dtype) {
  check_shape(shape);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = std::shared_ptr<void>(std::const_pointer_cast<void>(std::move(owner)), data);
  t.data_ = data;
  return t;
}

Tensor Tensor::from_floats(const Shape& shape, const std::vector<float>& values) {
  Tensor t = empty(shape, DType::Float32);
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "from_floats: ", values.size(),
             " values for shape ", shape_str(shape));
  std::memcpy(t.data_, values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::from_ints(const Shape& shape, const std::vector<int64_t>& values, DType dtype) {
  Tensor t = empty(shape, dtype);
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "from_ints: ", values.size(),
             " values for shape ", shape_str(shape));
  for (size_t i = 0; i < values.size(); ++i)
    t.set_from_double(static_cast<int64_t>(i), static_cast<double>(values[i]));
  return t;
}

int64_t Tensor::dim(int64_t axis) const {
  int64_t r = ndim();
  if (axis < 0) axis += r;
  KILN_CHECK(axis >= 0 && axis < r, "axis ", axis, " out of range for a tensor of rank ", r);
  return shape_[static_cast<size_t>(axis)];
}

Tensor Tensor::reshape(const Shape& shape) const {
  check_shape(shape);
  KILN_CHECK(shape_numel(shape) == numel(), "cannot view a tensor of shape ", shape_str(shape_), " as ",
             shape_str(shape), ": element counts differ");
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::slice_outer(int64_t begin, int64_t end) const {
  KILN_CHECK(ndim() >= 1, "slice_outer on a scalar");
  KILN_CHECK(0 <= begin && begin <= end && end <= shape_[0], "slice [", begin, ", ", end,
             ") out of range for axis 0 of size ", shape_[0]);
  Tensor t = *this;
  int64_t row = numel() / std::max<int64_t>(shape_[0], 1) * dtype_bytes(dtype_);
  t.data_ = static_cast<char*>(data_) + begin * row;
  t.shape_[0] = end - begin;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

double Tensor::get_as_double(int64_t i) const {
  switch (dtype_) {
    case DType::Float32:
      return data<float>()[i];
    case DType::Float16:
      return half_to_float(data<uint16_t>()[i]);
    case DType::Int8:
      return data<int8_t>()[i];
    case DType::UInt8:
      return data<uint8_t>()[i];
    case DType::Int32:
      return data<int32_t>()[i];
    case DType::Int64:
      return static_cast<double>(data<int64_t>()[i]);
    case DType::Bool:
      return data<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::Float64:
      return data<double>()[i];
    case DType::Int16:
      return data<int16_t>()[i];
    case DType::UInt16:
      return data<uint16_t>()[i];
    case DType::UInt32:
      return data<uint32_t>()[i];
    case DType::UInt64:
      return static_cast<double>(data<uint64_t>()[i]);
    case DType::BFloat16:
      return bfloat16_to_float(data<uint16_t>()[i]);
  }
  return 0;
}

template <typename T>
static T saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

void Tensor::set_from_double(int64_t i, double v) {
  switch (dtype_) {
    case DType::Float32:
      data<float>()[i] = static_cast<float>(v);
      return;
    case DType::Float16:
      data<uint16_t>()[i] = float_to_half(static_cast<float>(v));
      return;
    case DType::Int8:
      data<int8_t>()[i] = saturate<int8_t>(v);
      return;
    case DType::UInt8:
      data<uint8_t>()[i] = saturate<uint8_t>(v);
      return;
    case DType::Int32:
      data<int32_t>()[i] = saturate<int32_t>(v);
      return;
    case DType::Int64:
      data<int64_t>()[i] = saturate<int64_t>(v);
      return;
    case DType::Bool:
      data<uint8_t>()[i] = v != 0.0;
      return;
    case DType::Float64:
      data<double>()[i] = v;
      return;
    case DType::Int16:
      data<int16_t>()[i] = saturate<int16_t>(v);
      return;
    case DType::UInt16:
      data<uint16_t>()[i] = saturate<uint16_t>(v);
      return;
    case DType::UInt32:
      data<uint32_t>()[i] = saturate<uint32_t>(v);
      return;
    case DType::UInt64:
      data<uint64_t>()[i] = saturate<uint64_t>(v);
      return;
    case DType::BFloat16:
      data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v));
      return;
  }
}

bool Tensor::bitwise_equal(const Tensor& other) const {
  if (shape_ != other.shape_ || dtype_ != other.dtype_) return false;
  return nbytes() == 0 || std::memcmp(data_, other.data_, nbytes()) == 0;
}

std::string tensor_summary(const Tensor& t) {
  std::string s = shape_str(t.shape()) + " " + std::string(dtype_name(t.dtype()));
  int64_t n = t.numel();
  if (n == 0) return s + " (empty)";
  double lo = t.get_as_double(0), hi = lo, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.get_as_double(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, " min=%.6g max=%.6g mean=%.6g", lo, hi, sum / static_cast<double>(n));
  return s + buf;
}

}  // namespace kiln
