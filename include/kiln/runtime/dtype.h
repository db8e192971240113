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
};
inline constexpr int kNumDTypes = 7;

// Bytes per element (Bool is one byte).
int dtype_bytes(DType t);
// "float32", "float16", "int8", "uint8", "int32", "int64", "bool".
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
bool is_float(DType t);
bool is_integer(DType t);  // Int8, UInt8, Int32, Int64 (not Bool)

// IEEE half <-> float conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace kiln
