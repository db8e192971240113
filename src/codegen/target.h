// Code-generation targets: the host CPU and the Hexagon DSP versions.
//
//   llvm          the host CPU (x86-64 with the machine's vector features);
//                 VTCM is emulated by the runtime's pool (4 MiB by default)
//   hexagon-v66   Hexagon v66 with HVX 128-byte vectors, 256 KiB of VTCM
//   hexagon-v68   ... 4 MiB of VTCM
//   hexagon-v69   ... 8 MiB of VTCM
//   hexagon-v73   ... 8 MiB of VTCM
//
// A target is data: the LLVM triple, CPU and features codegen asks for, and
// the scratchpad capacity the tensor-IR capacity check and the Hexagon
// runtime's pool use. Plain C++; no LLVM headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "tir/transform/passes.h"

namespace kiln::codegen {

struct Target {
  enum class Kind { Host, Hexagon };
  Kind kind = Kind::Host;
  std::string name = "llvm";  // as written after --target
  std::string triple;         // empty for the host: the process's own triple
  std::string cpu;            // host: empty for the machine's CPU, or -mcpu's name
  std::string features;       // LLVM feature string; empty for the host (the CPU's own)
  uint64_t vtcm_capacity = 4ull << 20;
  int vector_bytes = 0;              // the widest vector register (HVX: 128); 0: unknown
  bool float16_conversions = false;  // F16C: float16 kernels are compiled
  int int8_dot_lanes = 0;            // VNNI's int32 lanes: quantized convs on integers (CpuTarget)
  int int16_dot_lanes = 0;           // vpmaddwd's int32 lanes (CpuTarget)

  bool is_hexagon() const { return kind == Kind::Hexagon; }
};

// The host CPU.
Target host_target();
// "llvm" (the host CPU), "llvm -mcpu=NAME" (an x86-64 CPU as LLVM names it:
// x86-64-v3, skylake-avx512, znver3, ...) or "hexagon-vNN"; anything else
// is a kiln::Error listing the known names.
Target parse_target(const std::string& name);
// The features a host target's code may use, as the runtime records and
// checks them (sse4.2 avx avx2 fma f16c avx512f ...): the named CPU's, or the
// machine's when the target names none. In src/codegen's LLVM half.
std::vector<std::string> target_cpu_features(const Target& t);
// The name LLVM gives the target's CPU (the machine's when it names none).
std::string target_cpu_name(const Target& t);
// What the default schedules need to know of it.
schedule::CpuTarget schedule_target(const Target& t);
const std::vector<std::string>& known_target_names();

// The tensor-IR pass options a build for `t` uses: its scratchpad capacity
// and, on the host, its vector width (Hexagon's HVX code comes from
// hand-written kernels, so vectorize-loops leaves its loops alone).
tir::TirPassOptions tir_pass_options(const Target& t);

}  // namespace kiln::codegen
