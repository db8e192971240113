// The example NPU's device description: engines, memory tiers, dtypes.
//
// The emulator (npu_runtime.cc) and the compile-time checks (patterns.cc)
// read the same description, so what the checks accept is what the emulator
// can run. Defaults: L0 4 KiB, L1 256 KiB, L2 512 KiB, DRAM unbounded; a
// 16x16 systolic MATRIX engine, CONV, VECTOR, POOLING and ACTIVATION
// engines; int8 and float32 data.
//
// Placement rule: an operand lives in the smallest tier that holds it whole.
// A dispatch whose working set (all operands) exceeds L1 is tiled: tiles are
// staged through L1 and the tile shape is recorded. Weights must fit L2 (they
// stay resident on chip), otherwise the check rejects the op.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "kiln/runtime/dtype.h"

namespace kiln::example_npu {

enum class Engine : uint8_t { Matrix, Conv, Vector, Pooling, Activation };
inline constexpr int kNumEngines = 5;
const char* engine_name(Engine e);

enum class Tier : uint8_t { L0, L1, L2, DRAM };
inline constexpr int kNumTiers = 4;
const char* tier_name(Tier t);

// How float32 data is held on the device: as float32, or, like most NPUs,
// in 16 bits (IEEE half, or bfloat16) with float32 accumulation: every
// dispatch's float32 inputs, weights and bias are rounded to it on the way in
// and its output on the way out, so results differ from the reference by the
// format's rounding (fp16 about 1e-3 relative, bf16 about 1e-2).
enum class Precision : uint8_t { Float32, Float16, BFloat16 };
const char* precision_name(Precision p);
// `v` rounded to the nearest value of `p` (ties to even), as a float.
float round_to(float v, Precision p);

struct DeviceDesc {
  // Capacity in bytes of L0, L1, L2 (DRAM is unbounded).
  std::array<int64_t, 3> capacity = {4 * 1024, 256 * 1024, 512 * 1024};
  // Bytes each tier moves per cycle: L0, L1, L2, DRAM.
  std::array<int64_t, kNumTiers> bandwidth = {128, 64, 32, 8};
  int64_t systolic_size = 16;  // MATRIX: systolic_size^2 MACs per cycle
  int64_t conv_macs_per_cycle = 256;
  int64_t vector_lanes = 16;  // VECTOR, POOLING, ACTIVATION: elements per cycle

  // float32 multiply-accumulates on MATRIX and CONV take this many int8 slots.
  int64_t float32_mac_cost = 4;
  Precision precision = Precision::Float32;

  // Work per cycle of an engine for data of `dtype` (int8 at full rate).
  int64_t macs_per_cycle(Engine e, DType dtype = DType::Int8) const;
  // Smallest tier that holds `bytes` whole.
  Tier tier_for(int64_t bytes) const;
  int64_t l1_bytes() const { return capacity[1]; }
  int64_t l2_bytes() const { return capacity[2]; }
};

// Overrides from key=value options: l0, l1, l2 (bytes, or with a K/M suffix),
// systolic, precision (fp32, fp16, bf16). Throws kiln::Error on an unknown
// key or a bad value.
DeviceDesc device_from_options(const std::map<std::string, std::string>& options);
std::string device_summary(const DeviceDesc& d);

bool dtype_supported(DType t);  // int8 and float32 data
// Accumulator outputs of int8 MATRIX/CONV work are int32.
bool output_dtype_supported(DType t);

// Which engine runs an op, or nullptr when the device has none for it. The
// runtime refines this per node: 1x1 convolutions run on MATRIX, depthwise
// ones on VECTOR.
const char* engine_for_op(const std::string& op);
Engine engine_of(const std::string& op);  // op must have an engine

}  // namespace kiln::example_npu
