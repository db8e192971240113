// The bring-your-own-codegen tutorial, step by step, for MatmulReLU and
// Conv2dReLU on the example NPU emulator:
//
//   1. list the patterns the backend registered
//   2. partition the model (fuse by pattern, merge regions) and explain it
//   3. run the backend's codegen (a kiln.graph per offloaded function)
//   4. build one .kmod file, load it back with the runtime alone
//   5. run it, and check the VALUES against the reference interpreter
//
// Build and run:  ninja -C build byoc_tutorial && build/byoc_tutorial [KILN_SOURCE_DIR]
// It exits with 1 when any value differs from the reference.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "pattern/registry.h"
#include "runtime/module_file.h"
#include "runtime/vm.h"

using namespace kiln;

namespace {

// Deterministic inputs: a small ramp with both signs, so relu matters.
Tensor ramp(const Shape& shape, double scale) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, scale * static_cast<double>((i * 7) % 13 - 6));
  return t;
}

bool run_model(const std::string& path, const std::string& expected_pattern) {
  std::cout << "\n== " << path << "\n";
  Module m = load_module(path);

  // Step 2: partition for example_npu, merging adjacent matches.
  PartitionOptions opts;
  opts.backends = {"example_npu"};
  PartitionReport report;
  Module parted = partition_module(m, opts, /*merge=*/true, &report);
  std::cout << report.explain() << "offload: " << report.summary() << "\n";
  if (report.offloaded_count() != static_cast<int64_t>(report.ops.size()) ||
      report.ops.front().pattern != expected_pattern || report.region_count() != 1) {
    std::cout << "FAIL: expected one region from " << expected_pattern << "\n";
    return false;
  }

  // Step 3: codegen, to see what the backend receives.
  std::map<std::string, BackendArtifacts> artifacts;
  run_codegen(parted, {}, &artifacts);
  for (const auto& [symbol, graph] : artifacts.at("example_npu").artifacts)
    std::cout << "codegen: " << symbol << " -> kiln.graph of " << graph.size() << " bytes\n";

  // Step 4: build one file, and load it back as a deployment would.
  std::string kmod =
      (std::filesystem::temp_directory_path() / (std::filesystem::path(path).stem().string() + ".kmod"))
          .string();
  write_kmod(kmod, build_executable(parted));
  VirtualMachine vm(read_kmod(kmod));
  std::cout << "built " << kmod << "\n";

  // Step 5: run and compare with the reference interpreter.
  std::vector<Tensor> inputs;
  for (const auto& p : m.find("main")->params) inputs.push_back(ramp(p->type->tensor.shape, 0.25));
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  RunResult run = vm.run(inputs, ro);
  const std::vector<Tensor>& got = run.outputs;
  std::vector<Tensor> want = interpret(m, "main", inputs);
  for (const auto& e : run.events)
    if (e.backend != "host") std::cout << "dispatch: " << e.to_json() << "\n";
  double max_err = 0;
  for (int64_t i = 0; i < want[0].numel(); ++i)
    max_err = std::max(max_err, std::fabs(got[0].get_as_double(i) - want[0].get_as_double(i)));
  std::printf("max abs difference from the reference: %.3g (%lld values)\n", max_err,
              static_cast<long long>(want[0].numel()));
  std::remove(kmod.c_str());
  return max_err <= 1e-5;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = argc > 1 ? argv[1] : ".";
  try {
    // Step 1: the registered patterns of the backend, in claim order.
    std::cout << "example_npu patterns (priority, name):\n";
    for (const PatternEntry* e : pattern_registry().for_backend("example_npu"))
      std::cout << "  " << e->priority << "  " << e->name << "\n";
    bool ok = run_model(root + "/examples/matmul_relu.kir", "example_npu.matmul_relu_fused");
    ok = run_model(root + "/examples/conv2d_relu.kir", "example_npu.conv2d_relu_fused") && ok;
    std::cout << (ok ? "\nOK: both models match the reference\n" : "\nFAILED\n");
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
