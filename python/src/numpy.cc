// Tensors as numpy arrays and back, without copies where the layout allows.
#include <cstring>

#include "common.h"
#include "op/op.h"

namespace kiln::python {

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return py::dtype::of<float>();
    case DType::Float16:
      return py::dtype("float16");
    case DType::Int8:
      return py::dtype::of<int8_t>();
    case DType::UInt8:
      return py::dtype::of<uint8_t>();
    case DType::Int32:
      return py::dtype::of<int32_t>();
    case DType::Int64:
      return py::dtype::of<int64_t>();
    case DType::Bool:
      return py::dtype::of<bool>();
    case DType::Float64:
      return py::dtype::of<double>();
    case DType::Int16:
      return py::dtype::of<int16_t>();
    case DType::UInt16:
      return py::dtype::of<uint16_t>();
    case DType::UInt32:
      return py::dtype::of<uint32_t>();
    case DType::UInt64:
      return py::dtype::of<uint64_t>();
    case DType::BFloat16:
      throw Error("bfloat16 has no numpy dtype; convert the tensor to float32 (astype) first");
  }
  throw Error("internal error: a dtype outside the enum");
}

std::string dtype_text(const py::dtype& d) { return d.attr("name").cast<std::string>(); }

DType dtype_from_numpy(const py::dtype& d) {
  // Byte order and aliases are normalised by comparing the dtype objects.
  for (DType t : {DType::Float32, DType::Float16, DType::Float64, DType::Int8, DType::UInt8, DType::Int16,
                  DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Bool})
    if (d.is(numpy_dtype(t)) || d.attr("__eq__")(numpy_dtype(t)).cast<bool>()) return t;
  throw Error("numpy dtype " + dtype_text(d) +
              " is not a kiln element type (float32, float16, float64, int8, uint8, int16, uint16, int32, "
              "uint32, int64, uint64, bool)");
}

DType dtype_from_object(const py::handle& obj) {
  if (py::isinstance<py::str>(obj)) {
    std::string name = obj.cast<std::string>();
    if (auto t = dtype_from_name(name)) return *t;
    throw Error("unknown dtype '" + name +
                "' (float32, float16, float64, bfloat16, int8, uint8, int16, uint16, int32, uint32, int64, "
                "uint64, bool)");
  }
  return dtype_from_numpy(py::dtype::from_args(py::reinterpret_borrow<py::object>(obj)));
}

py::array to_numpy(const Tensor& t, bool writeable) {
  // The capsule owns a handle to the storage; numpy drops it with the array.
  auto* owner = new Tensor(t);
  py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array a(numpy_dtype(t.dtype()), shape, {}, const_cast<void*>(t.raw()), base);
  if (!writeable) a.attr("setflags")(py::arg("write") = false);
  return a;
}

namespace {

bool usable_in_place(const py::array& a) {
  bool contiguous = (a.flags() & py::array::c_style) != 0;
  bool aligned = reinterpret_cast<uintptr_t>(a.data()) % kTensorAlignment == 0;
  return contiguous && aligned;
}

}  // namespace

Tensor from_numpy(const py::handle& obj, const std::string& what, std::vector<py::object>& keep) {
  if (!py::isinstance<py::array>(obj))
    throw Error(what + ": expected a numpy array, got " +
                std::string(py::str(py::type::of(obj).attr("__name__"))));
  py::array a = py::reinterpret_borrow<py::array>(obj);
  DType dtype = dtype_from_numpy(a.dtype());
  Shape shape(a.shape(), a.shape() + a.ndim());
  if (usable_in_place(a)) {
    keep.push_back(a);
    return Tensor::wrap(const_cast<void*>(a.data()), shape, dtype);
  }
  // A strided or unaligned array: one aligned, contiguous copy.
  Tensor t = Tensor::empty(shape, dtype);
  py::array dst = to_numpy(t);
  py::module_::import("numpy").attr("copyto")(dst, a);
  return t;
}

Tensor from_numpy_as(const py::handle& obj, const TensorDesc& want, const std::string& what,
                     std::vector<py::object>& keep) {
  if (py::isinstance<py::array>(obj)) {
    py::array a = py::reinterpret_borrow<py::array>(obj);
    Shape shape(a.shape(), a.shape() + a.ndim());
    std::string given = shape_str(shape) + " " + dtype_text(a.dtype());
    std::string expected = shape_str(want.shape) + " " + std::string(dtype_name(want.dtype));
    bool dtype_ok = a.dtype().attr("__eq__")(numpy_dtype(want.dtype)).cast<bool>();
    if (!dtype_ok)
      throw Error(what + " is " + given + ", expected " + expected + " (convert with .astype(numpy." +
                  std::string(dtype_name(want.dtype)) + "))");
    if (shape != want.shape) throw Error(what + " is " + given + ", expected " + expected);
  }
  return from_numpy(obj, what, keep);
}

py::dict attrs_to_dict(const Attrs& attrs) {
  py::dict d;
  for (const auto& [name, value] : attrs.items())
    std::visit([&](const auto& v) { d[py::str(name)] = py::cast(v); }, value);
  return d;
}

Attrs attrs_from_dict(const py::dict& d) {
  Attrs out;
  for (const auto& [key, value] : d) {
    std::string name = py::str(key);
    if (py::isinstance<py::bool_>(value)) {
      out.set(name, int64_t(value.cast<bool>()));
    } else if (py::isinstance<py::int_>(value)) {
      out.set(name, value.cast<int64_t>());
    } else if (py::isinstance<py::float_>(value)) {
      out.set(name, value.cast<double>());
    } else if (py::isinstance<py::str>(value)) {
      out.set(name, value.cast<std::string>());
    } else if (py::isinstance<py::sequence>(value)) {
      py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
      bool all_int = true;
      for (auto item : seq) all_int &= py::isinstance<py::int_>(item);
      if (all_int)
        out.set(name, seq.cast<std::vector<int64_t>>());
      else
        out.set(name, seq.cast<std::vector<double>>());
    } else {
      throw Error("attribute " + name + ": " + std::string(py::str(py::type::of(value).attr("__name__"))) +
                  " is not an attribute value (int, float, str or a list of ints or floats)");
    }
  }
  return out;
}

}  // namespace kiln::python
