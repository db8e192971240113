// The example NPU's device description.
#include "backends/example_npu/runtime/device.h"

#include <algorithm>
#include <cstring>

#include "kiln/runtime/error.h"

namespace kiln::example_npu {

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::Matrix:
      return "MATRIX";
    case Engine::Conv:
      return "CONV";
    case Engine::Vector:
      return "VECTOR";
    case Engine::Pooling:
      return "POOLING";
    case Engine::Activation:
      return "ACTIVATION";
  }
  return "?";
}

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::L0:
      return "L0";
    case Tier::L1:
      return "L1";
    case Tier::L2:
      return "L2";
    case Tier::DRAM:
      return "DRAM";
  }
  return "?";
}

int64_t DeviceDesc::macs_per_cycle(Engine e, DType dtype) const {
  int64_t slow = dtype == DType::Float32 ? float32_mac_cost : 1;
  switch (e) {
    case Engine::Matrix:
      return std::max<int64_t>(systolic_size * systolic_size / slow, 1);
    case Engine::Conv:
      return std::max<int64_t>(conv_macs_per_cycle / slow, 1);
    case Engine::Vector:
    case Engine::Pooling:
    case Engine::Activation:
      return vector_lanes;
  }
  return 1;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Float32:
      return "fp32";
    case Precision::Float16:
      return "fp16";
    case Precision::BFloat16:
      return "bf16";
  }
  return "?";
}

float round_to(float v, Precision p) {
  switch (p) {
    case Precision::Float32:
      return v;
    case Precision::Float16:
      return half_to_float(float_to_half(v));
    case Precision::BFloat16: {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      if ((bits & 0x7f800000u) == 0x7f800000u) return v;  // inf and NaN stay
      bits += 0x7fffu + ((bits >> 16) & 1u);
      bits &= 0xffff0000u;
      std::memcpy(&v, &bits, sizeof bits);
      return v;
    }
  }
  return v;
}

Tier DeviceDesc::tier_for(int64_t bytes) const {
  for (int i = 0; i < 3; ++i)
    if (bytes <= capacity[i]) return static_cast<Tier>(i);
  return Tier::DRAM;
}

static int64_t parse_size(const std::string& key, const std::string& v) {
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    throw Error("example_npu device option " + key + "=" + v + ": expected a size such as 4096, 4K or 1M");
  }
  std::string suffix = v.substr(used);
  if (suffix == "K" || suffix == "k")
    n *= 1024;
  else if (suffix == "M" || suffix == "m")
    n *= 1024 * 1024;
  else if (!suffix.empty())
    throw Error("example_npu device option " + key + "=" + v + ": unknown suffix '" + suffix + "' (K or M)");
  if (n <= 0) throw Error("example_npu device option " + key + "=" + v + ": must be positive");
  return n;
}

DeviceDesc device_from_options(const std::map<std::string, std::string>& options) {
  DeviceDesc d;
  for (const auto& [k, v] : options) {
    if (k == "l0")
      d.capacity[0] = parse_size(k, v);
    else if (k == "l1")
      d.capacity[1] = parse_size(k, v);
    else if (k == "l2")
      d.capacity[2] = parse_size(k, v);
    else if (k == "systolic")
      d.systolic_size = parse_size(k, v);
    else if (k == "precision") {
      if (v == "fp32")
        d.precision = Precision::Float32;
      else if (v == "fp16")
        d.precision = Precision::Float16;
      else if (v == "bf16")
        d.precision = Precision::BFloat16;
      else
        throw Error("example_npu device option precision=" + v + ": expected fp32, fp16 or bf16");
    } else
      throw Error("example_npu: unknown device option '" + k + "' (known: l0, l1, l2, systolic, precision)");
  }
  if (!(d.capacity[0] <= d.capacity[1] && d.capacity[1] <= d.capacity[2]))
    throw Error("example_npu: memory tiers must grow: l0 <= l1 <= l2");
  return d;
}

std::string device_summary(const DeviceDesc& d) {
  return "example_npu: L0 " + std::to_string(d.capacity[0]) + " B, L1 " + std::to_string(d.capacity[1]) +
         " B, L2 " + std::to_string(d.capacity[2]) + " B, MATRIX " + std::to_string(d.systolic_size) + "x" +
         std::to_string(d.systolic_size) + ", " + precision_name(d.precision);
}

bool dtype_supported(DType t) { return t == DType::Int8 || t == DType::Float32; }
bool output_dtype_supported(DType t) { return dtype_supported(t) || t == DType::Int32; }

const char* engine_for_op(const std::string& op) {
  if (op == "matmul" || op == "nn.dense") return "MATRIX";
  if (op == "nn.conv2d") return "CONV";
  if (op == "nn.max_pool2d" || op == "nn.avg_pool2d") return "POOLING";
  if (op == "nn.relu" || op == "clip" || op == "sigmoid" || op == "tanh" || op == "nn.gelu" ||
      op == "nn.hard_swish" || op == "nn.hard_sigmoid" || op == "nn.silu")
    return "ACTIVATION";
  if (op == "add" || op == "subtract" || op == "multiply" || op == "divide" || op == "nn.softmax" ||
      op == "nn.batch_norm" || op == "quantize" || op == "dequantize")
    return "VECTOR";
  return nullptr;
}

Engine engine_of(const std::string& op) {
  const char* e = engine_for_op(op);
  KILN_ASSERT(e != nullptr, "example_npu has no engine for " + op);
  std::string s = e;
  if (s == "MATRIX") return Engine::Matrix;
  if (s == "CONV") return Engine::Conv;
  if (s == "POOLING") return Engine::Pooling;
  if (s == "ACTIVATION") return Engine::Activation;
  return Engine::Vector;
}

}  // namespace kiln::example_npu
