// Tensor: a dense, row-major array with a shape and an element type.
//
// Storage is 64-byte aligned and shared: copying a Tensor copies a handle, not
// the data. Views (reshape, a slice of the outermost axis) share the storage of
// the tensor they come from. A tensor may also wrap caller-owned memory
// (Tensor::wrap), which kiln never frees, so backends and the VM can run on
// the caller's buffers without copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/dtype.h"

namespace kiln {

using Shape = std::vector<int64_t>;

// Element count; throws kiln::Error when it does not fit in 64 bits.
int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "(2, 4)"

// The largest tensor kiln allocates: KILN_MAX_TENSOR_BYTES (a byte count, or
// with a K, M, G or T suffix), 16 GiB when unset (docs/limits.md).
uint64_t max_tensor_bytes();
// The byte size of a tensor of `shape` and `dtype`, checked before anything
// is allocated: a shape check_shape_extent refuses, a size that overflows or
// one larger than max_tensor_bytes() throws kiln::Error starting with `what`
// (the input, constant or file: "input %x", "m.onnx: initializer 'w'").
int64_t checked_tensor_bytes(const Shape& shape, DType dtype, const std::string& what);

// The largest dimension, and the most elements of a non-empty shape, that
// kiln's IR, its .kir text and its kernels' index arithmetic hold: 2^48.
// An empty shape may not hide a larger dimension either (strides of the
// other axes would overflow).
inline constexpr int64_t kMaxShapeExtent = int64_t{1} << 48;
// Throws kiln::Error starting with `what` when a dimension is negative or
// larger than kMaxShapeExtent, or the elements are more than it.
void check_shape_extent(const Shape& shape, const std::string& what);

inline constexpr size_t kTensorAlignment = 64;

class Tensor {
 public:
  Tensor() = default;  // an empty handle: defined() is false

  // New zero-initialised storage.
  static Tensor zeros(const Shape& shape, DType dtype);
  // New uninitialised storage (for outputs that will be fully written).
  static Tensor empty(const Shape& shape, DType dtype);
  // Caller-owned memory; the caller keeps it alive while the tensor is used.
  static Tensor wrap(void* data, const Shape& shape, DType dtype);
  // Memory that `owner` keeps alive (a mapped file, say), for as long as the
  // tensor or a view of it lives.
  static Tensor view(std::shared_ptr<const void> owner, void* data, const Shape& shape, DType dtype);
  // A float32 tensor filled from values (numel must match).
  static Tensor from_floats(const Shape& shape, const std::vector<float>& values);
  // An int64 tensor filled from values (numel must match).
  static Tensor from_ints(const Shape& shape, const std::vector<int64_t>& values, DType dtype = DType::Int64);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_bytes(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  // Views sharing this tensor's storage.
  Tensor reshape(const Shape& shape) const;              // same numel
  Tensor slice_outer(int64_t begin, int64_t end) const;  // rows [begin, end) of axis 0

  // A deep copy with its own storage.
  Tensor clone() const;
  // Element i (flat index) converted to double / written from double, for
  // any dtype. Slow; meant for tests, printing and reference code.
  double get_as_double(int64_t i) const;
  void set_from_double(int64_t i, double v);

  // Same shape, dtype and bytes.
  bool bitwise_equal(const Tensor& other) const;

 private:
  std::shared_ptr<void> storage_;  // keeps the allocation alive (or empty for wrap())
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::Float32;
};

// Summary statistics used by `kiln run`: "(2, 8) float32 min=... max=... mean=..."
std::string tensor_summary(const Tensor& t);

}  // namespace kiln
