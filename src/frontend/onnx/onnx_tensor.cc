// TensorProto decoding: typed repeated fields, raw little-endian bytes, and
// external data files.
#include "frontend/onnx/onnx_tensor.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "frontend/onnx/importer.h"
#include "kiln/runtime/error.h"
#include "runtime/file_io.h"

namespace kiln::onnx_import {

std::string onnx_type_name(int32_t elem_type) {
  if (onnx::TensorProto_DataType_IsValid(elem_type))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  return "element type " + std::to_string(elem_type);
}

std::optional<DType> dtype_from_onnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto_DataType_FLOAT:
      return DType::Float32;
    case onnx::TensorProto_DataType_FLOAT16:
      return DType::Float16;
    case onnx::TensorProto_DataType_INT8:
      return DType::Int8;
    case onnx::TensorProto_DataType_UINT8:
      return DType::UInt8;
    case onnx::TensorProto_DataType_INT32:
      return DType::Int32;
    case onnx::TensorProto_DataType_INT64:
      return DType::Int64;
    case onnx::TensorProto_DataType_BOOL:
      return DType::Bool;
    case onnx::TensorProto_DataType_DOUBLE:
      return DType::Float64;
    case onnx::TensorProto_DataType_INT16:
      return DType::Int16;
    case onnx::TensorProto_DataType_UINT16:
      return DType::UInt16;
    case onnx::TensorProto_DataType_UINT32:
      return DType::UInt32;
    case onnx::TensorProto_DataType_UINT64:
      return DType::UInt64;
    case onnx::TensorProto_DataType_BFLOAT16:
      return DType::BFloat16;
    default:
      return std::nullopt;
  }
}

int32_t onnx_type_from_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return onnx::TensorProto_DataType_FLOAT;
    case DType::Float16:
      return onnx::TensorProto_DataType_FLOAT16;
    case DType::Int8:
      return onnx::TensorProto_DataType_INT8;
    case DType::UInt8:
      return onnx::TensorProto_DataType_UINT8;
    case DType::Int32:
      return onnx::TensorProto_DataType_INT32;
    case DType::Int64:
      return onnx::TensorProto_DataType_INT64;
    case DType::Bool:
      return onnx::TensorProto_DataType_BOOL;
    case DType::Float64:
      return onnx::TensorProto_DataType_DOUBLE;
    case DType::Int16:
      return onnx::TensorProto_DataType_INT16;
    case DType::UInt16:
      return onnx::TensorProto_DataType_UINT16;
    case DType::UInt32:
      return onnx::TensorProto_DataType_UINT32;
    case DType::UInt64:
      return onnx::TensorProto_DataType_UINT64;
    case DType::BFloat16:
      return onnx::TensorProto_DataType_BFLOAT16;
  }
  return onnx::TensorProto_DataType_UNDEFINED;
}

static std::string tensor_what(const onnx::TensorProto& t) {
  return t.name().empty() ? std::string("an unnamed tensor") : "tensor '" + t.name() + "'";
}

// The bytes of an external-data tensor: location, offset and length keys;
// `nbytes` (what the shape needs) is checked before anything is read.
static std::string read_external(const onnx::TensorProto& t, const std::string& base_dir, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::stoll(kv.value());
      if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw Error(tensor_what(t) + ": external data key '" + kv.key() + "' has a non-numeric value '" +
                  kv.value() + "'");
    }
  }
  if (location.empty()) throw Error(tensor_what(t) + ": external data without a 'location'");
  if (location.find("..") != std::string::npos || location[0] == '/')
    throw Error(tensor_what(t) + ": external data location '" + location +
                "' must be a relative path inside the model's folder");
  std::string path = base_dir.empty() ? location : base_dir + "/" + location;
  try {
    check_file_size(path, "external data file");  // not a device, not over KILN_MAX_FILE_BYTES
  } catch (const Error& e) {
    throw Error(tensor_what(t) + ": " + e.message());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(tensor_what(t) + ": cannot open external data file '" + path + "'");
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (length < 0) length = size - offset;
  if (offset < 0 || length < 0 || offset > size || length > size - offset)
    throw Error(tensor_what(t) + ": external data of " + std::to_string(length) + " bytes at offset " +
                std::to_string(offset) + " is outside '" + path + "' (" + std::to_string(size) + " bytes)");
  if (static_cast<uint64_t>(length) != nbytes)
    throw Error(tensor_what(t) + ": external data has " + std::to_string(length) +
                " bytes but its shape needs " + std::to_string(nbytes));
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  return bytes;
}

template <typename Field, typename Store>
static void copy_field(const Field& field, int64_t n, const onnx::TensorProto& t, const char* field_name,
                       Store store) {
  if (static_cast<int64_t>(field.size()) != n)
    throw Error(tensor_what(t) + ": " + field_name + " holds " + std::to_string(field.size()) +
                " values but the shape " + shape_str(Shape(t.dims().begin(), t.dims().end())) + " needs " +
                std::to_string(n));
  for (int64_t i = 0; i < n; ++i) store(i, field[static_cast<int>(i)]);
}

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& base_dir) {
  auto dtype = dtype_from_onnx(t.data_type());
  if (!dtype)
    throw UnsupportedError(tensor_what(t) + " has element type " + onnx_type_name(t.data_type()) +
                           ", which kiln does not support (supported: FLOAT, FLOAT16, BFLOAT16, DOUBLE, "
                           "INT8, UINT8, INT16, UINT16, INT32, "
                           "UINT32, INT64, UINT64, BOOL)");
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0) throw Error(tensor_what(t) + " has a negative dimension " + std::to_string(d));
    shape.push_back(d);
  }
  const size_t nbytes = static_cast<size_t>(checked_tensor_bytes(shape, *dtype, tensor_what(t)));
  const int64_t n = shape_numel(shape);

  std::string external;
  const std::string* raw = nullptr;
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    external = read_external(t, base_dir, nbytes);
    raw = &external;
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }
  // Sizes are checked before allocating, so a corrupt shape cannot ask for
  // terabytes.
  if (raw && raw->size() != nbytes)
    throw Error(tensor_what(t) + ": raw data has " + std::to_string(raw->size()) + " bytes but shape " +
                shape_str(shape) + " of " + std::string(dtype_name(*dtype)) + " needs " +
                std::to_string(nbytes));
  if (!raw) {
    bool in_uint64_data = *dtype == DType::UInt32 || *dtype == DType::UInt64;
    int64_t have = *dtype == DType::Float32   ? t.float_data_size()
                   : *dtype == DType::Int64   ? t.int64_data_size()
                   : *dtype == DType::Float64 ? t.double_data_size()
                   : in_uint64_data           ? t.uint64_data_size()
                                              : t.int32_data_size();
    if (have != n)
      throw Error(tensor_what(t) + ": holds " + std::to_string(have) + " values but the shape " +
                  shape_str(shape) + " needs " + std::to_string(n));
  }
  if (raw) {
    Tensor out = Tensor::empty(shape, *dtype);  // every byte is copied: not zeroed first
    if (nbytes) std::memcpy(out.raw(), raw->data(), nbytes);
    return out;
  }
  Tensor out = Tensor::zeros(shape, *dtype);
  switch (*dtype) {
    case DType::Float32:
      copy_field(t.float_data(), n, t, "float_data", [&](int64_t i, float v) { out.data<float>()[i] = v; });
      break;
    case DType::Int64:
      copy_field(t.int64_data(), n, t, "int64_data",
                 [&](int64_t i, int64_t v) { out.data<int64_t>()[i] = v; });
      break;
    case DType::Int32:
      copy_field(t.int32_data(), n, t, "int32_data",
                 [&](int64_t i, int32_t v) { out.data<int32_t>()[i] = v; });
      break;
    case DType::Float16:
      // float16 values are stored as their bit patterns in int32_data.
      copy_field(t.int32_data(), n, t, "int32_data",
                 [&](int64_t i, int32_t v) { out.data<uint16_t>()[i] = static_cast<uint16_t>(v); });
      break;
    case DType::Int8:
      copy_field(t.int32_data(), n, t, "int32_data",
                 [&](int64_t i, int32_t v) { out.data<int8_t>()[i] = static_cast<int8_t>(v); });
      break;
    case DType::UInt8:
    case DType::Bool:
      copy_field(t.int32_data(), n, t, "int32_data",
                 [&](int64_t i, int32_t v) { out.data<uint8_t>()[i] = static_cast<uint8_t>(v); });
      break;
    case DType::Float64:
      copy_field(t.double_data(), n, t, "double_data",
                 [&](int64_t i, double v) { out.data<double>()[i] = v; });
      break;
    case DType::Int16:
      copy_field(t.int32_data(), n, t, "int32_data",
                 [&](int64_t i, int32_t v) { out.data<int16_t>()[i] = static_cast<int16_t>(v); });
      break;
    case DType::UInt16:
    case DType::BFloat16:
      // bfloat16 values, like float16 ones, are bit patterns in int32_data.
      copy_field(t.int32_data(), n, t, "int32_data",
                 [&](int64_t i, int32_t v) { out.data<uint16_t>()[i] = static_cast<uint16_t>(v); });
      break;
    case DType::UInt32:
      copy_field(t.uint64_data(), n, t, "uint64_data",
                 [&](int64_t i, uint64_t v) { out.data<uint32_t>()[i] = static_cast<uint32_t>(v); });
      break;
    case DType::UInt64:
      copy_field(t.uint64_data(), n, t, "uint64_data",
                 [&](int64_t i, uint64_t v) { out.data<uint64_t>()[i] = v; });
      break;
  }
  return out;
}

onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(onnx_type_from_dtype(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  return p;
}

Tensor read_tensor_file(const std::string& path) {
  onnx::TensorProto p;
  if (!p.ParseFromString(read_file(path, "tensor file")))
    throw Error("'" + path + "' is not a serialized ONNX TensorProto (protobuf parse failed)");
  try {
    return tensor_from_proto(p);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(path + ": " + e.message());
  } catch (const Error& e) {
    throw Error(path + ": " + e.message());
  }
}

}  // namespace kiln::onnx_import
