// kiln_onnx_compare: imports an ONNX model, compiles it (the model compile
// pipeline of `kiln run`: driver::compile_model) or, with --interpret, runs
// it on the reference interpreter, and compares every output with saved
// reference outputs (from ONNX Runtime, see ort_run.js). Used by ppocr.sh and
// bench/e2e_ppocr.sh.
//
//   kiln_onnx_compare MODEL.onnx DIR --input-shape x=1,3,48,320 [--atol A] [--rtol R] [--repeat N]
//                     [--backend NAME ...] [--interpret] [--target T] [--float16-precision P]
//   kiln_onnx_compare MODEL.kmod DIR [--atol A] [--rtol R] [--repeat N]
//
// With --backend the model is partitioned too and kiln's offload line is
// printed first; the compile summary line follows. With --repeat N > 1 one
// warm-up run comes first and the median and minimum of N runs are printed.
//
// DIR holds input.npy and output_<i>.npy. An element matches when
// |kiln - ort| <= atol + rtol * |ort|. Prints one line:
//   MODEL  path=compiled  outputs=1  max_abs=...  max_rel_to_peak=...  kiln_ms=...  min_ms=... compile_ms=...
//   PASS
// and exits 0 when every element matches, 1 otherwise (or on any error).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "driver/compile_model.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "kiln/runtime/npy.h"
#include "runtime/module_file.h"
#include "runtime/vm.h"
#include "transform/partition.h"

namespace {

int run(int argc, char** argv) {
  using namespace kiln;
  std::vector<std::string> pos;
  ImportOptions opts;
  double atol = 1e-4, rtol = 1e-3;
  int repeat = 1;
  std::vector<std::string> backends;
  bool interpret_only = false;
  std::string target;                        // --target: as kiln's (the machine's CPU when empty)
  std::string float16_precision = "per-op";  // --float16-precision: as kiln's
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--input-shape")
      parse_input_shape_flag(next(), opts);
    else if (a == "--atol")
      atol = std::stod(next());
    else if (a == "--rtol")
      rtol = std::stod(next());
    else if (a == "--repeat")
      repeat = std::max(1, std::stoi(next()));
    else if (a == "--backend")
      backends.push_back(next());
    else if (a == "--interpret")
      interpret_only = true;
    else if (a == "--target")
      target = next();
    else if (a == "--float16-precision")
      float16_precision = next();
    else
      pos.push_back(a);
  }
  if (float16_precision != "per-op" && float16_precision != "excess")
    throw Error("--float16-precision " + float16_precision + ": give per-op or excess");
  if (pos.size() != 2) {
    std::cerr << "usage: kiln_onnx_compare MODEL.onnx DIR --input-shape NAME=D0,D1,... [--atol A] [--rtol R] "
                 "[--repeat N] [--backend NAME ...] [--interpret] [--target \"llvm -mcpu=NAME\"] "
                 "[--float16-precision per-op|excess]\n";
    return 2;
  }
  const std::string model = pos[0], dir = pos[1];
  // A .kmod runs on the runtime alone (what `kiln compile` wrote).
  const bool kmod = is_kmod_file(model);
  Module m = kmod ? Module() : import_onnx(model, opts);
  Tensor input = read_npy(dir + "/input.npy");
  std::optional<VirtualMachine> vm;
  double compile_ms = 0, load_ms = 0;
  if (kmod) {
    // Load time: from the file to a module ready to run (ONNX Runtime's
    // session creation is the peer).
    auto t0 = std::chrono::steady_clock::now();
    vm.emplace(read_kmod(model));
    load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  } else if (!interpret_only) {
    driver::CompileOptions co;
    co.partition.backends = backends;
    if (!target.empty()) co.target = codegen::parse_target(target);
    co.float16_excess_precision = float16_precision == "excess";
    driver::CompileSummary summary;
    vm.emplace(driver::compile_model(m, co, &summary));
    compile_ms = summary.compile_ms;
    if (summary.offloaded) std::cout << "offload: " << summary.report.summary() << "\n";
    std::cout << "compile: " << summary.str() << "\n";
  }
  std::vector<Tensor> outs;
  std::vector<double> times;
  if (repeat > 1) outs = vm ? vm->run({input}) : interpret(m, "main", {input});
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    outs = vm ? vm->run({input}) : interpret(m, "main", {input});
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  bool pass = true;
  double max_abs = 0, peak = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string path = dir + "/output_" + std::to_string(i) + ".npy";
    if (!std::filesystem::exists(path)) throw Error("missing reference output " + path);
    Tensor want = read_npy(path);
    if (want.shape() != outs[i].shape())
      throw Error("output " + std::to_string(i) + " has shape " + shape_str(outs[i].shape()) +
                  ", ONNX Runtime's " + shape_str(want.shape()));
    int64_t bad = 0;
    for (int64_t k = 0; k < want.numel(); ++k) {
      double g = outs[i].get_as_double(k), w = want.get_as_double(k);
      double err = std::abs(g - w);
      if (std::isnan(err)) err = INFINITY;
      max_abs = std::max(max_abs, err);
      peak = std::max(peak, std::abs(w));
      if (!(err <= atol + rtol * std::abs(w))) ++bad;
    }
    if (bad) {
      pass = false;
      std::cerr << "output " << i << ": " << bad << " of " << want.numel() << " elements out of tolerance\n";
    }
  }
  std::printf(
      "%s  path=%s  outputs=%zu  max_abs=%.3g  max_rel_to_peak=%.3g  kiln_ms=%.2f  min_ms=%.2f  "
      "compile_ms=%.0f  load_ms=%.2f  %s\n",
      std::filesystem::path(model).filename().c_str(),
      kmod             ? "kmod"
      : interpret_only ? "interpreter"
                       : "compiled",
      outs.size(), max_abs, peak > 0 ? max_abs / peak : 0.0, times[times.size() / 2], times.front(),
      compile_ms, load_ms, pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
