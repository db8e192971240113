// Runs a compiled .kmod with the runtime library ALONE: this program links
// kiln_runtime only (no compiler, no IR, no LLVM), as a deployment would.
//
//   kiln compile examples/conv2d_relu.kir -b example_npu -o conv.kmod
//   ninja -C build byoc_run_kmod && build/byoc_run_kmod conv.kmod
//
// Inputs are a fixed ramp; it prints each output's summary and one line per
// backend dispatch.
#include <iostream>

#include "runtime/module_file.h"
#include "runtime/profile.h"
#include "runtime/vm.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: byoc_run_kmod MODEL.kmod\n";
    return 2;
  }
  try {
    kiln::Executable exe = kiln::read_kmod(argv[1]);
    if (!exe.offload_summary.empty()) std::cout << "offload: " << exe.offload_summary << "\n";
    std::vector<kiln::Tensor> inputs;
    for (const auto& in : exe.host.inputs) {
      kiln::Tensor t = kiln::Tensor::empty(in.desc.shape, in.desc.dtype);
      for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, static_cast<double>(i % 7) - 3.0);
      inputs.push_back(t);
    }
    kiln::VirtualMachine vm(std::move(exe));
    kiln::VirtualMachine::RunOptions opts;
    opts.record_events = true;
    kiln::RunResult result = vm.run(inputs, opts);
    for (size_t i = 0; i < result.outputs.size(); ++i)
      std::cout << "output_" << i << ": " << kiln::tensor_summary(result.outputs[i]) << "\n";
    std::cout << kiln::dispatch_log(result.events);
    return 0;
  } catch (const kiln::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
