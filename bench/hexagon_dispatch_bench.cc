// The DSP session's per-dispatch overhead: one small region on the Hexagon
// DSP (under qemu-hexagon-static), dispatched by the VM through the session
// kiln keeps open per loaded module, against the baseline it replaces,
// starting the emulator once per call on the same executable (what `kiln run
// FILE.kir --target hexagon-vNN` does). Values are checked against the
// reference; prints microseconds per dispatch and the ratio, for a tiny
// region (launch cost) and a 1 MiB one (transfer cost).
//
//   kiln_bench_hexagon_dispatch [--repeat N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"

namespace {

using namespace kiln;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Row {
  std::string name;
  double session_us = 0, process_us = 0;
};

Row measure(int64_t n, int repeat) {
  std::string text = "def @main(%x: Tensor[(1, " + std::to_string(n) + "), float32]) -> Tensor[(1, " +
                     std::to_string(n) +
                     "), float32] {\n  %y = nn.relu(%x)\n  %z = multiply(%y, %y)\n  return %z\n}\n";
  Module m = parse_module(text, "dispatch.kir");
  Tensor x = Tensor::empty({1, n}, DType::Float32);
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = float((i * 37) % 101) / 50.0f - 1.0f;
  std::vector<Tensor> want = interpret(m, "main", {x});

  driver::CompileOptions o;
  o.partition.backends = {"hexagon"};
  Executable exe = driver::compile_model(m, o);
  if (exe.backends.size() != 1) throw Error("the region did not go to the DSP");
  VirtualMachine vm(exe);
  Row row;
  row.name = "relu*relu, " + std::to_string(n * 4 / 1024) + " KiB";
  std::vector<double> session;
  for (int i = 0; i < repeat + 1; ++i) {
    auto t0 = Clock::now();
    std::vector<Tensor> got = vm.run({x});
    if (i > 0) session.push_back(us_since(t0));
    if (!got[0].bitwise_equal(want[0])) throw Error("the DSP's result differs from the reference");
  }
  row.session_us = median(session);

  // The baseline: the same executable, one emulator process per call, tensors through .npy files.
  std::string dir =
      (std::filesystem::temp_directory_path() / ("kiln-dispatch-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  const Tensor& elf = exe.constants.at("hexagon.executable");
  std::string path = dir + "/regions.elf";
  std::ofstream(path, std::ios::binary)
      .write(static_cast<const char*>(elf.raw()), std::streamsize(elf.nbytes()));
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  std::string kernel;
  {
    // The region's one kernel, as the session names it.
    const std::string& artifact = exe.backends[0].functions[0].artifact;
    size_t at = artifact.find("\"kernel\":\"");
    kernel = artifact.substr(at + 10, artifact.find('"', at + 10) - at - 10);
  }
  write_npy(dir + "/x.npy", x);
  std::vector<double> process;
  for (int i = 0; i < std::max(3, repeat / 10) + 1; ++i) {
    auto t0 = Clock::now();
    codegen::ProcessResult r =
        codegen::run_hexagon_executable(path, {kernel, dir + "/x.npy", "-", "-", dir + "/z.npy"});
    Tensor z = read_npy(dir + "/z.npy");
    if (i > 0) process.push_back(us_since(t0));
    if (r.exit_code != 0) throw Error("the executable failed: " + r.err);
    if (std::memcmp(z.raw(), want[0].raw(), want[0].nbytes()) != 0) throw Error("the process result differs");
  }
  row.process_us = median(process);
  std::filesystem::remove_all(dir);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 50;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    std::fprintf(stderr, "usage: kiln_bench_hexagon_dispatch [--repeat N]\n");
    return 2;
  }
  try {
    std::vector<Row> rows = {measure(16, repeat), measure(256 * 1024, repeat / 5 + 1)};
    std::printf("Hexagon dispatch (qemu-hexagon-static -cpu v67 on %s)\n",
                codegen::host_cpu_summary().c_str());
    std::printf("%-24s %14s %18s %8s\n", "region", "session us", "process/call us", "ratio");
    for (const Row& r : rows)
      std::printf("%-24s %14.0f %18.0f %7.3fx\n", r.name.c_str(), r.session_us, r.process_us,
                  r.session_us / r.process_us);
    std::printf("session: the VM's dispatch through the module's DSP session (median of %d);\n", repeat);
    std::printf(
        "process/call: the emulator started per call on the same executable, .npy files in and out\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
