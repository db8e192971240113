#include "kiln/runtime/dtype.h"

#include <cstring>

namespace kiln {

int dtype_bytes(DType t) {
  switch (t) {
    case DType::Float32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::Int8:
      return 1;
    case DType::UInt8:
      return 1;
    case DType::Int32:
      return 4;
    case DType::Int64:
      return 8;
    case DType::Bool:
      return 1;
    case DType::Float64:
      return 8;
    case DType::Int16:
    case DType::UInt16:
    case DType::BFloat16:
      return 2;
    case DType::UInt32:
      return 4;
    case DType::UInt64:
      return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::Int8:
      return "int8";
    case DType::UInt8:
      return "uint8";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Bool:
      return "bool";
    case DType::Float64:
      return "float64";
    case DType::Int16:
      return "int16";
    case DType::UInt16:
      return "uint16";
    case DType::UInt32:
      return "uint32";
    case DType::UInt64:
      return "uint64";
    case DType::BFloat16:
      return "bfloat16";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::Float64 || t == DType::BFloat16;
}

bool is_unsigned(DType t) {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

bool is_integer(DType t) {
  return is_unsigned(t) || t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  // A NaN must stay a NaN even when its payload sits in the dropped bits.
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;  // ties to even; a carry into the exponent is the right result (up to inf)
  return static_cast<uint16_t>(x >> 16);
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  uint32_t mant = x & 0x7fffffu;
  if (exp == 255) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = exp - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exp: correct
  return static_cast<uint16_t>(half);
}

}  // namespace kiln
