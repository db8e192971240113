#include "codegen/target.h"

#include <algorithm>

#include "kiln/runtime/error.h"
#include "schedule/schedule.h"

namespace kiln::codegen {

namespace {

struct HexagonVersion {
  const char* name;
  const char* cpu;
  const char* hvx;  // the HVX version feature
  uint64_t vtcm_capacity;
};

// VTCM sizes of the Snapdragon parts these versions ship in.
constexpr HexagonVersion kHexagonVersions[] = {
    {"hexagon-v66", "hexagonv66", "+hvxv66", 256ull << 10},
    {"hexagon-v68", "hexagonv68", "+hvxv68", 4ull << 20},
    {"hexagon-v69", "hexagonv69", "+hvxv69", 8ull << 20},
    {"hexagon-v73", "hexagonv73", "+hvxv73", 8ull << 20},
};

}  // namespace

Target host_target() {
  Target t;
  const schedule::CpuTarget host = schedule::host_cpu_target();
  t.vector_bytes = host.vector_bytes;
  t.float16_conversions = host.float16_conversions;
  t.int8_dot_lanes = host.int8_dot_lanes;
  t.int16_dot_lanes = host.int16_dot_lanes;
  return t;
}

schedule::CpuTarget schedule_target(const Target& t) {
  if (t.is_hexagon()) return {t.vector_bytes, 32, t.vtcm_capacity};
  schedule::CpuTarget cpu{t.vector_bytes, t.vector_bytes >= 64 ? 32 : 16};
  cpu.float16_conversions = t.float16_conversions;
  cpu.int8_dot_lanes = t.int8_dot_lanes;
  cpu.int16_dot_lanes = t.int16_dot_lanes;
  // The machine's caches when the target is the machine; a named CPU's are
  // not known here, so it keeps the typical ones.
  if (t.cpu.empty()) {
    const schedule::CpuTarget host = schedule::host_cpu_target();
    cpu.l1_bytes = host.l1_bytes;
    cpu.l1_ways = host.l1_ways;
    cpu.l2_bytes = host.l2_bytes;
    cpu.caches_reported = host.caches_reported;
  }
  return cpu;
}

const std::vector<std::string>& known_target_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"llvm"};
    for (const HexagonVersion& v : kHexagonVersions) n.push_back(v.name);
    return n;
  }();
  return names;
}

tir::TirPassOptions tir_pass_options(const Target& t) {
  tir::TirPassOptions o;
  o.scratchpad_capacity = t.vtcm_capacity;
  o.vector_bytes = t.is_hexagon() ? 0 : t.vector_bytes;
  o.vector_registers = t.is_hexagon() ? 0 : schedule_target(t).vector_registers;
  // Host code: uint8 by int8 products (quantized convs) as VNNI dot products.
  if (!t.is_hexagon()) o.dot_lanes = t.int8_dot_lanes;
  // And int16 products by pairs (quantized products without VNNI) as vpmaddwd.
  if (!t.is_hexagon()) o.dot16_lanes = t.int16_dot_lanes;
  // No HVX floating point is asked for: a float loop's vector hint would
  // make LLVM form vectors it cannot select.
  o.vector_float = !t.is_hexagon();
  // kiln's Hexagon runtime runs a parallel loop as one task.
  if (t.is_hexagon()) o.parallel_tasks = 1;
  return o;
}

Target parse_target(const std::string& name) {
  if (name == "llvm" || name == "host") return host_target();
  const std::string mcpu = "llvm -mcpu=";
  if (name.rfind(mcpu, 0) == 0) {
    Target t;
    t.name = name;
    t.cpu = name.substr(mcpu.size());
    if (t.cpu.empty() || t.cpu.find(' ') != std::string::npos)
      throw Error("--target '" + name + "': -mcpu takes one CPU name (e.g. llvm -mcpu=x86-64-v3)");
    std::vector<std::string> features = target_cpu_features(t);  // checks the name
    auto has = [&](const char* f) {
      return std::find(features.begin(), features.end(), f) != features.end();
    };
    t.vector_bytes = has("avx512f") ? 64 : has("avx") ? 32 : 16;
    t.float16_conversions = has("f16c");
    t.int8_dot_lanes = t.vector_bytes == 64 && has("avx512vnni") ? 16 : has("avxvnni") ? 8 : 0;
    t.int16_dot_lanes = t.vector_bytes == 64 && has("avx512bw") ? 16 : has("avx2") ? 8 : 0;
    return t;
  }
  for (const HexagonVersion& v : kHexagonVersions) {
    if (name != v.name) continue;
    Target t;
    t.kind = Target::Kind::Hexagon;
    t.name = v.name;
    t.triple = "hexagon-unknown-none-elf";
    t.cpu = v.cpu;
    // HVX in 128-byte mode. No HVX floating point (hvx-qfloat / hvx-ieee-fp):
    // float kernels stay scalar, which is also what QEMU can emulate.
    t.features = std::string(v.hvx) + ",+hvx-length128b";
    t.vtcm_capacity = v.vtcm_capacity;
    t.vector_bytes = 128;
    return t;
  }
  std::string known;
  for (const std::string& n : known_target_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown --target '" + name + "' (known: " + known + ", and llvm -mcpu=CPU)");
}

}  // namespace kiln::codegen
