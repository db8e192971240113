// What the hexagon backend's codegen hands its runtime for one offloaded
// region: the region's buffers (slots) and the kernel calls that compute it.
//
// The kernels themselves are compiled into one Hexagon executable per module
// (the constant named by `executable`); a region is a list of calls of its
// harness entries on slots. As JSON, versioned:
//
//   {"format": "kiln.hexagon.region", "version": 1, "target": "hexagon-v68",
//    "executable": "hexagon.executable",
//    "slots": [{"name": "x", "kind": "input", "dtype": "float32", "shape": [1, 3, 32, 32]}, ...],
//    "inputs": [0], "outputs": [4],
//    "steps": [{"kernel": "hexagon_main_0_conv2d_add_relu", "ops": "nn.conv2d+add+nn.relu",
//               "args": [0, 1, 2, 3], "vtcm_bytes": 36864}, ...]}
//
// Slot kinds: input (the function's parameters, in order), output (its
// results), temp (values between kernels), constant (data from the module's
// constants, by the slot's name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "op/op.h"

namespace kiln::hexagon {

inline constexpr int kRegionFormatVersion = 1;

struct RegionSlot {
  enum class Kind { Input, Output, Temp, Constant };
  std::string name;
  Kind kind = Kind::Temp;
  TensorDesc desc;
};

struct RegionStep {
  std::string kernel;  // the harness entry
  std::string ops;     // "nn.conv2d+add+nn.relu", for profiles
  std::vector<uint32_t> args;
  uint64_t vtcm_bytes = 0;  // the kernel's static VTCM plan
};

struct RegionProgram {
  std::string target;      // "hexagon-v68"
  std::string executable;  // the constant holding the executable
  std::vector<RegionSlot> slots;
  std::vector<uint32_t> inputs, outputs;
  std::vector<RegionStep> steps;
};

std::string region_to_json(const RegionProgram& p);
// Parses and checks (slot ids in range, known kinds and dtypes); `what`
// names the region in errors.
RegionProgram region_from_json(const std::string& text, const std::string& what);

}  // namespace kiln::hexagon
