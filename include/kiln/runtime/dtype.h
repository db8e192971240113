// Element types of tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

enum class DType : uint8_t {
  Float32,
  Float16,
  Int8,
  UInt8,
  Int32,
  Int64,
  Bool,
  // Appended later; the values above are stored in files and stay stable.
  Float64,
  Int16,
  UInt16,
  UInt32,
  UInt64,
  BFloat16,  // 1 sign, 8 exponent, 7 mantissa bits: the top half of a float32
};
inline constexpr int kNumDTypes = 13;

// Bytes per element (Bool is one byte).
int dtype_bytes(DType t);
// "float32", "float16", "int8", "uint8", "int32", "int64", "bool", "float64",
// "int16", "uint16", "uint32", "uint64", "bfloat16".
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
bool is_float(DType t);     // Float32, Float16, Float64, BFloat16
bool is_integer(DType t);   // the signed and unsigned integer types (not Bool)
bool is_unsigned(DType t);  // UInt8, UInt16, UInt32, UInt64

// IEEE half <-> float conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// bfloat16 <-> float: widening is exact; narrowing rounds to nearest even
// (as ONNX Cast specifies) and keeps NaN a NaN.
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

}  // namespace kiln
