// The hexagon backend end to end: model regions partitioned to the DSP,
// compiled through the shared lowering, tiled into VTCM and run in a DSP
// session under qemu-hexagon-static, checked against the reference
// interpreter; the backend next to the example NPU; a region whose tiles
// cannot fit VTCM staying on the host; the emulator killed mid-session; and
// malformed region programs and session requests.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "backends/hexagon/runtime/dsp_session.h"
#include "backends/hexagon/runtime/region_program.h"
#include "cli_util.h"
#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "codegen/prim_runner.h"
#include "driver/compile_model.h"
#include "frontend/load_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"
#include "lower/lower.h"
#include "pattern/registry.h"
#include "random_args.h"
#include "runtime/module_file.h"
#include "test_util.h"
#include "tir/te/te.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln {
namespace {

const std::string kSmallCnn = std::string(KILN_SOURCE_DIR) + "/examples/small_cnn/small_cnn.kir";

using testing::random_args;

driver::CompileOptions offload_to(std::vector<std::string> backends, const std::string& dsp = "hexagon-v68") {
  driver::CompileOptions o;
  o.partition.backends = std::move(backends);
  o.codegen.backend["hexagon"]["target"] = dsp;
  o.partition.backend_options.backend["hexagon"]["target"] = dsp;
  return o;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape());
    for (int64_t i = 0; i < want[o].numel(); ++i)
      ASSERT_NEAR(got[o].get_as_double(i), want[o].get_as_double(i), tol)
          << "output " << o << " element " << i;
  }
}

const DispatchEvent* hexagon_event(const RunResult& r) {
  for (const auto& e : r.events)
    if (e.backend == "hexagon") return &e;
  return nullptr;
}

TEST(HexagonBackend, SmallCnnRunsOnTheDspTiledIntoV66Vtcm) {
  Module m = load_model(kSmallCnn);
  std::vector<Tensor> args = random_args(*m.find("main"), 7);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, offload_to({"hexagon"}, "hexagon-v66"), &summary);
  // The whole model is on the DSP, softmax included (its reciprocal in
  // float32 there: the Hexagon runtime has no float64 division).
  EXPECT_NE(summary.report.summary().find("11 of 11 ops offloaded in 1 region (hexagon: 11)"),
            std::string::npos)
      << summary.report.summary();
  ASSERT_EQ(exe.backends.size(), 1u);
  EXPECT_EQ(exe.backends[0].backend, "hexagon");
  EXPECT_EQ(exe.backends[0].constants, std::vector<std::string>{"hexagon.executable"});
  // Through the .kmod bytes, as `kiln run model.kmod` loads it.
  Executable loaded = decode_kmod(encode_kmod(exe), "small_cnn.kmod");
  VirtualMachine vm(loaded);
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  ro.verify = true;
  RunResult r = vm.run(args, ro);
  expect_close(r.outputs, want, 1e-5);
  for (const auto& c : r.checks) EXPECT_TRUE(c.ok) << c.str();
  const DispatchEvent* e = hexagon_event(r);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->engine, "hexagon-v66");
  // The tiles went through the VTCM pool and stayed within v66's 256 KiB.
  EXPECT_EQ(e->counters.at("vtcm_capacity_bytes"), 256 << 10);
  EXPECT_GT(e->counters.at("vtcm_allocations"), 5);
  EXPECT_GT(e->counters.at("vtcm_high_water_bytes"), 0);
  EXPECT_LE(e->counters.at("vtcm_high_water_bytes"), 128 << 10);
  EXPECT_EQ(e->counters.at("vtcm_used_bytes"), 0);  // every tile freed
  // A second run in the same session gives the same values.
  EXPECT_TRUE(vm.run(args)[0].bitwise_equal(r.outputs[0]));
}

TEST(HexagonBackend, RegionsOnTheExampleNpuAndTheDspTogether) {
  Module m = load_model(kSmallCnn);
  std::vector<Tensor> args = random_args(*m.find("main"), 11);
  std::vector<Tensor> want = interpret(m, "main", args);
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, offload_to({"example_npu", "hexagon"}), &summary);
  // The NPU, listed first, wins ties; the pooling and flatten it has no
  // pattern for go to the DSP.
  std::string s = summary.report.summary();
  EXPECT_NE(s.find("example_npu: "), std::string::npos) << s;
  EXPECT_NE(s.find("hexagon: "), std::string::npos) << s;
  ASSERT_EQ(exe.backends.size(), 2u);
  VirtualMachine vm(exe);
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  RunResult r = vm.run(args, ro);
  expect_close(r.outputs, want, 1e-5);
  EXPECT_NE(hexagon_event(r), nullptr);
}

TEST(HexagonBackend, Int8SmallCnnIsBitExactOnTheDsp) {
  Module m = load_model(std::string(KILN_SOURCE_DIR) + "/examples/small_cnn/small_cnn_int8.kir");
  Tensor image = Tensor::empty({1, 3, 32, 32}, DType::Int8);
  for (int64_t i = 0; i < image.numel(); ++i) image.data<int8_t>()[i] = int8_t((i * 73 + 11) % 255 - 127);
  std::vector<Tensor> want = interpret(m, "main", {image});
  driver::CompileOptions o = offload_to({"hexagon"}, "hexagon-v66");
  std::string asm_path = std::string(KILN_BINARY_DIR) + "/small_cnn_int8.s";
  o.codegen.backend["hexagon"]["asm"] = asm_path;
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, o, &summary);
  EXPECT_NE(summary.report.summary().find("19 of 19 ops offloaded in 1 region (hexagon: 19)"),
            std::string::npos)
      << summary.report.summary();
  ASSERT_EQ(summary.backend_notes.size(), 1u);
  EXPECT_NE(summary.backend_notes[0].find("hexagon_main_0 on hexagon-v66: 4 kernels, VTCM peak"),
            std::string::npos)
      << summary.backend_notes[0];
  VirtualMachine vm(exe);
  std::vector<Tensor> got = vm.run({image});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].bitwise_equal(want[0]));
  // The tiles' VTCM comes from the runtime's allocation calls; the stride-1
  // conv's products are HVX vrmpy on vector loads of its VTCM window.
  std::ifstream in(asm_path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("call HexagonBackendAllocateVTCM"), std::string::npos);
  EXPECT_NE(text.find("call HexagonBackendFreeVTCM"), std::string::npos);
  EXPECT_NE(text.find(".w += vrmpy(v"), std::string::npos);
  EXPECT_NE(text.find("= vmem("), std::string::npos);
  // hvx=on: integer loops as HVX vectors (copies into VTCM are vmem loads
  // and stores), still bit-exact; float loops stay scalar.
  o.codegen.backend["hexagon"]["hvx"] = "on";
  Executable hvx = driver::compile_model(m, o);
  VirtualMachine vm_hvx(hvx);
  EXPECT_TRUE(vm_hvx.run({image})[0].bitwise_equal(want[0]));
  std::ifstream in_hvx(asm_path);
  std::string hvx_text((std::istreambuf_iterator<char>(in_hvx)), std::istreambuf_iterator<char>());
  EXPECT_NE(hvx_text.find("vmem("), std::string::npos);
}

// floor, ceil and round (to nearest even) come from kiln's Hexagon runtime
// (floorf, ceilf, roundevenf): bit for bit the host's on halves, the sign of
// zero, large and tiny values, infinities and NaN.
TEST(HexagonBackend, RoundingMatchesTheHostBitForBit) {
  const std::vector<float> values = {0.0f,    -0.0f,      0.5f,        -0.5f,        1.5f,        -1.5f,
                                     2.5f,    -2.5f,      0.49999997f, -0.49999997f, 0.50000006f, 1e-30f,
                                     -1e-30f, 8388607.5f, -8388607.5f, 8388609.0f,   1e30f,       -1e30f,
                                     3.7f,    -3.7f,      INFINITY,    -INFINITY,    NAN,         123456.5f};
  const int64_t n = int64_t(values.size());
  std::string shape = "Tensor[(" + std::to_string(n) + "), float32]";
  Module m =
      parse_module("def @main(%x: " + shape + ") -> (" + shape + ", " + shape + ", " + shape +
                       ") {\n  %f = floor(%x)\n  %c = ceil(%x)\n  %r = round(%x)\n  return (%f, %c, %r)\n}\n",
                   "round.kir");
  Tensor x = Tensor::empty({n}, DType::Float32);
  std::copy(values.begin(), values.end(), x.data<float>());
  std::vector<Tensor> want = interpret(m, "main", {x});
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, offload_to({"hexagon"}), &summary);
  EXPECT_NE(summary.report.summary().find("3 of 3 ops offloaded"), std::string::npos)
      << summary.report.summary();
  VirtualMachine vm(exe);
  std::vector<Tensor> got = vm.run({x});
  ASSERT_EQ(got.size(), 3u);
  for (size_t o = 0; o < 3; ++o)
    for (int64_t i = 0; i < n; ++i) {
      float g = got[o].data<float>()[i], w = want[o].data<float>()[i];
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(g)) << "output " << o << " of " << values[size_t(i)];
        continue;
      }
      EXPECT_EQ(std::memcmp(&g, &w, 4), 0)
          << "output " << o << " of " << values[size_t(i)] << ": " << g << " vs " << w;
    }
}

// Every op the hexagon backend claims, alone, on the DSP against the
// reference interpreter: float32 within 1e-5 (softmax's reciprocal is
// float32 there), integer ops bit for bit. The loop also checks that the
// table covers every registered hexagon pattern.
TEST(HexagonBackend, EveryClaimedOpMatchesTheReference) {
  const std::map<std::string, std::pair<std::string, std::string>> models = {
      {"conv2d", {"nn.conv2d(%x4, %w4, padding=[1, 1, 1, 1])", "Tensor[(2, 4, 6, 6), float32]"}},
      {"dense", {"nn.dense(%m, %n)", "Tensor[(12, 9), float32]"}},
      {"matmul", {"matmul(%m, %mt)", "Tensor[(12, 9), float32]"}},
      {"max_pool2d",
       {"nn.max_pool2d(%x4, pool_size=[3, 3], padding=[1, 1])", "Tensor[(2, 4, 6, 6), float32]"}},
      {"avg_pool2d",
       {"nn.avg_pool2d(%x4, pool_size=[2, 2], strides=[2, 2])", "Tensor[(2, 4, 3, 3), float32]"}},
      {"adaptive_avg_pool2d", {"nn.adaptive_avg_pool2d(%x4)", "Tensor[(2, 4, 1, 1), float32]"}},
      {"add", {"add(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"subtract", {"subtract(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"multiply", {"multiply(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"divide", {"divide(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"maximum", {"maximum(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"minimum", {"minimum(%x4, %y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"relu", {"nn.relu(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"clip", {"clip(%x4, a_min=-0.5, a_max=0.5)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"sigmoid", {"sigmoid(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"hard_swish", {"nn.hard_swish(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"hard_sigmoid", {"nn.hard_sigmoid(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"silu", {"nn.silu(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"leaky_relu", {"nn.leaky_relu(%x4, alpha=0.1)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"negative", {"negative(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"abs", {"abs(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"exp", {"exp(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"sqrt", {"sqrt(%y4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"round", {"round(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"floor", {"floor(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"ceil", {"ceil(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"astype", {"astype(%q4, dtype=\"int32\")", "Tensor[(2, 4, 6, 6), int32]"}},
      {"batch_norm",
       {"nn.batch_norm(%x4, %g, %g, %g, const(Tensor[(4,), float32], [1.0, 2.0, 0.5, 3.0]))",
        "Tensor[(2, 4, 6, 6), float32]"}},
      {"softmax", {"nn.softmax(%x4)", "Tensor[(2, 4, 6, 6), float32]"}},
      {"reshape", {"reshape(%x4, newshape=[8, 36])", "Tensor[(8, 36), float32]"}},
      {"flatten", {"flatten(%x4)", "Tensor[(2, 144), float32]"}},
      {"squeeze", {"squeeze(%x1)", "Tensor[(4, 6, 6), float32]"}},
      {"expand_dims", {"expand_dims(%x4, axis=0)", "Tensor[(1, 2, 4, 6, 6), float32]"}},
      {"permute_dims", {"permute_dims(%x4, axes=[0, 2, 3, 1])", "Tensor[(2, 6, 6, 4), float32]"}},
  };
  const std::string params =
      "%x4: Tensor[(2, 4, 6, 6), float32], %y4: Tensor[(2, 4, 6, 6), float32], %w4: Tensor[(4, 4, 3, 3), "
      "float32], "
      "%q4: Tensor[(2, 4, 6, 6), int8], %x1: Tensor[(1, 4, 6, 6), float32], %m: Tensor[(12, 10), float32], "
      "%n: Tensor[(9, 10), float32], %mt: Tensor[(10, 9), float32], %g: Tensor[(4,), float32]";
  std::set<std::string> covered;
  for (const auto& [pattern, model] : models) {
    SCOPED_TRACE(pattern);
    Module m = parse_module(
        "def @main(" + params + ") -> " + model.second + " {\n  %b = " + model.first + "\n  return %b\n}\n",
        pattern + ".kir");
    driver::CompileSummary summary;
    Executable exe = driver::compile_model(m, offload_to({"hexagon"}), &summary);
    ASSERT_EQ(summary.report.offloaded_count(), int64_t(summary.report.ops.size()))
        << summary.report.explain();
    EXPECT_EQ(summary.report.ops.back().pattern, "hexagon." + pattern) << summary.report.explain();
    covered.insert(summary.report.ops.back().pattern);
    std::vector<Tensor> args;
    uint64_t seed = 17;
    for (const auto& p : m.find("main")->params) {
      Tensor t = Tensor::empty(p->type->tensor.shape, p->type->tensor.dtype);
      for (int64_t i = 0; i < t.numel(); ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double u = double(seed >> 40) / double(1 << 24);  // [0, 1)
        // %y4 positive (sqrt, divide); integers over int8's range.
        double v = p->name == "y4"            ? 0.25 + u
                   : t.dtype() == DType::Int8 ? std::floor(u * 255) - 127
                                              : u * 4 - 2;
        t.set_from_double(i, v);
      }
      args.push_back(t);
    }
    std::vector<Tensor> want = interpret(m, "main", args);
    VirtualMachine vm(exe);
    std::vector<Tensor> got = vm.run(args);
    ASSERT_EQ(got[0].dtype(), want[0].dtype());
    if (want[0].dtype() == DType::Float32)
      expect_close(got, want, 1e-5);
    else
      EXPECT_TRUE(got[0].bitwise_equal(want[0]));
  }
  for (const PatternEntry* e : pattern_registry().for_backend("hexagon"))
    EXPECT_TRUE(covered.count(e->name)) << e->name << " has no case here";
}

TEST(HexagonBackend, WorkingSetThatCannotBeTiledStaysOnTheHostWithTheReason) {
  // A 70000-long dot product: one output element already reads 280 KB of
  // each operand, more than half of v66's VTCM.
  Module m = parse_module(R"(
def @main(%x: Tensor[(1, 70000), float32], %w: Tensor[(70000, 1), float32]) -> Tensor[(1, 1), float32] {
  %y = matmul(%x, %w)
  %r = nn.relu(%y)
  return %r
})",
                          "big.kir");
  driver::CompileSummary summary;
  Executable exe = driver::compile_model(m, offload_to({"hexagon"}, "hexagon-v66"), &summary);
  const auto* y = summary.report.find("main", "y");
  ASSERT_NE(y, nullptr);
  EXPECT_NE(y->reason.find("cannot be tiled into VTCM"), std::string::npos) << y->reason;
  EXPECT_NE(y->reason.find("hexagon-v66"), std::string::npos) << y->reason;
  // v68's 4 MiB takes it.
  driver::CompileSummary big;
  driver::compile_model(m, offload_to({"hexagon"}, "hexagon-v68"), &big);
  EXPECT_EQ(big.report.find("main", "y")->backend, "hexagon") << big.report.find("main", "y")->reason;
}

// The emulators this process started.
std::vector<int> emulator_children() {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  while (dirent* ent = d ? readdir(d) : nullptr) {
    int pid = atoi(ent->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t close = line.rfind(')');
    if (close == std::string::npos || line.find("qemu-hexagon") == std::string::npos) continue;
    int ppid = 0;
    char state;
    if (sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid())
      out.push_back(pid);
  }
  if (d) closedir(d);
  return out;
}

TEST(HexagonBackend, KillingTheEmulatorIsAClearErrorNotAHang) {
  Module m = load_model(kSmallCnn);
  std::vector<Tensor> args = random_args(*m.find("main"), 3);
  Executable exe = driver::compile_model(m, offload_to({"hexagon"}));
  auto before = emulator_children();
  VirtualMachine vm(exe);
  vm.run(args);
  std::vector<int> started;
  for (int pid : emulator_children())
    if (std::find(before.begin(), before.end(), pid) == before.end()) started.push_back(pid);
  ASSERT_EQ(started.size(), 1u) << "one DSP session per loaded module";
  kill(started[0], SIGKILL);
  std::string err = testing::error_of([&] { vm.run(args); });
  EXPECT_NE(err.find("region hexagon_main_0"), std::string::npos) << err;
  EXPECT_NE(err.find("killed by signal 9"), std::string::npos) << err;
  // Later runs say the session has ended instead of trying again.
  err = testing::error_of([&] { vm.run(args); });
  EXPECT_NE(err.find("the session has ended"), std::string::npos) << err;
}

// A compiled module run where the emulator is not installed: the load fails
// with what is missing and how to install it, before anything runs.
TEST(HexagonBackend, MissingEmulatorIsAClearErrorAtLoad) {
  std::string kmod = std::string(KILN_BINARY_DIR) + "/small_cnn_hexagon.kmod";
  auto r = testing::kiln_cmd("compile " + kSmallCnn + " --backend hexagon -o " + kmod);
  ASSERT_EQ(r.code, 0) << r.out;
  std::string cmd = "env PATH=/nonexistent " + std::string(KILN_BINARY_DIR) + "/kiln run " + kmod +
                    " --random-inputs 1 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  EXPECT_NE(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("cannot run qemu-hexagon-static: No such file or directory"), std::string::npos) << out;
  EXPECT_NE(out.find("scripts/setup.sh"), std::string::npos) << out;
}

// kiln inspect of a .kmod shows the module: what was offloaded, each backend
// with its functions and their ops, the DSP executable, the host program.
TEST(HexagonBackend, InspectShowsTheModulesBackendsRegionsAndHostProgram) {
  std::string kmod = std::string(KILN_BINARY_DIR) + "/small_cnn_two_backends.kmod";
  auto r = testing::kiln_cmd("compile " + kSmallCnn + " --backend example_npu,hexagon -o " + kmod);
  ASSERT_EQ(r.code, 0) << r.out;
  r = testing::kiln_cmd("inspect " + kmod);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* line : {"  offload: 11 of 11 ops offloaded in 3 regions (example_npu: 9, hexagon: 2)",
                           "  backend example_npu ", "  backend hexagon ",
                           "    @hexagon_main_0: 2 ops (nn.adaptive_avg_pool2d, flatten), artifact ",
                           "    constant hexagon.executable: ", "  host program (3 nodes):",
                           "    f = call @hexagon_main_0", " = call @example_npu_main_0"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(HexagonBackend, MalformedRegionProgramsAreClearErrors) {
  using hexagon::region_from_json;
  EXPECT_NE(testing::error_of([] { region_from_json("{", "r"); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(testing::error_of([] {
              region_from_json(R"({"format": "kiln.graph"})", "r");
            }).find("not a kiln.hexagon.region"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              region_from_json(R"({"format": "kiln.hexagon.region", "version": 9})", "r");
            }).find("version 9"),
            std::string::npos);
  std::string past = testing::error_of([] {
    region_from_json(R"({"format": "kiln.hexagon.region", "version": 1, "target": "hexagon-v68",
      "executable": "e", "slots": [{"name": "x", "kind": "input", "dtype": "float32", "shape": [2]}],
      "inputs": [0], "outputs": [3], "steps": []})",
                     "region r");
  });
  EXPECT_NE(past.find("region r: slot 3 is past the slot table"), std::string::npos) << past;
}

TEST(HexagonBackend, SessionRefusesStepsTheExecutableDoesNotHold) {
  Module m = load_model(kSmallCnn);
  Executable exe = driver::compile_model(m, offload_to({"hexagon"}));
  const Tensor& elf = exe.constants.at("hexagon.executable");
  std::string path = std::string(KILN_BINARY_DIR) + "/hexagon_session_test.elf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(static_cast<const char*>(elf.raw()), std::streamsize(elf.nbytes()));
  }
  ASSERT_EQ(chmod(path.c_str(), 0700), 0);
  hexagon::DspSession session;
  hexagon::SessionRegion region;
  region.inputs = {0};
  region.outputs = {1};
  region.steps.push_back({"no_such_kernel", {0, 1}});
  Status s = session.start(path, {{16, nullptr}, {16, nullptr}}, {region}, 60);
  EXPECT_NE(s.message.find("the executable holds no kernel @no_such_kernel"), std::string::npos) << s.message;
}

TEST(HexagonBackend, CliTargetNamesTheDsp) {
  auto r = testing::kiln_cmd("run " + kSmallCnn +
                             " --backend hexagon --target hexagon-v66 --random-inputs 1 --verify");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(hexagon): max abs"), std::string::npos) << r.out;
  r = testing::kiln_cmd("run " + kSmallCnn + " --backend example_npu --target hexagon-v66 --random-inputs 1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--backend hexagon --target hexagon-v66"), std::string::npos) << r.out;
  // Two backends in one flag, the first listed winning ties; both in the
  // explanation, the report and the graph.
  std::string dot = std::string(KILN_BINARY_DIR) + "/two_backends.dot";
  r = testing::kiln_cmd("partition " + kSmallCnn + " --backend example_npu,hexagon --explain --dot " + dot);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(example_npu: 10, hexagon: 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("%g = nn.adaptive_avg_pool2d: hexagon by hexagon.adaptive_avg_pool2d"),
            std::string::npos)
      << r.out;
  EXPECT_NE(testing::read_text(dot).find("hexagon"), std::string::npos);
  r = testing::kiln_cmd("run " + kSmallCnn + " --backend example_npu,hexagon --random-inputs 1 --verify");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(example_npu): max abs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(hexagon): max abs"), std::string::npos) << r.out;
}

// A conv + relu kernel for a 24 KiB scratchpad: tiles of 4 channels by 8
// rows, each tile's padded input window and weights copied into VTCM, the
// tile computed there and copied out; the peak within half the scratchpad.
TEST(ScratchpadSchedule, ConvTilesAndTheirWindowsSitInVtcm) {
  lower::KernelSpec spec;
  spec.name = "k";
  TensorDesc x{{1, 8, 16, 16}, DType::Float32}, w{{16, 8, 3, 3}, DType::Float32},
      y{{1, 16, 16, 16}, DType::Float32};
  spec.params = {x, w};
  Attrs pad = normalize_attrs(*find_op("nn.conv2d"), Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  lower::KernelOp conv{"nn.conv2d", pad, {x, w}, {y}, {{0, -1, 0}, {1, -1, 0}}};
  lower::KernelOp relu{"nn.relu", normalize_attrs(*find_op("nn.relu"), {}), {y}, {y}, {{-1, 0, 0}}};
  spec.ops = {conv, relu};
  spec.outputs = {{1, 0}};
  schedule::CpuTarget dsp{128, 32, 24 << 10};
  std::string why;
  auto f = lower::lower_kernel(spec, &why, dsp);
  ASSERT_TRUE(f) << why;
  std::string text = tir::print_prim_func(**f);
  for (const char* line : {
           "for %i1_outer from 0 extent 4 {",
           "for %i2_outer from 0 extent 2 {",
           "allocate %conv2d_0_pad: Buffer[(1, 8, 10, 18), float32, scope=\"global.vtcm\", align=128]",
           "allocate %in1_buf: Buffer[(4, 8, 3, 3), float32, scope=\"global.vtcm\", align=128]",
           "allocate %relu_1_global_vtcm: Buffer[(1, 4, 8, 16), float32, scope=\"global.vtcm\", align=128]",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  EXPECT_LE(tir::scratchpad_peak_bytes(**f), 12u << 10);
  // Too small for even one output element's window: the reason, not a kernel.
  schedule::CpuTarget tiny{128, 32, 256};
  EXPECT_FALSE(lower::lower_kernel(spec, &why, tiny));
  EXPECT_NE(why.find("cannot be tiled into VTCM"), std::string::npos) << why;
}

// Kernel runs keep shapes both ways: a (64, 32) buffer comes back (64, 32),
// and the standalone executable takes a (64, 32) .npy for the buffer the
// build flattened to (2048).
TEST(HexagonPrimRun, TwoDimensionalBuffersKeepTheirShape) {
  namespace te = tir::te;
  te::Tensor a = te::placeholder({64, 32}, tir::DataType::int32(), "A");
  te::Tensor c = te::compute(
      {64, 32}, [&](const te::Axes& i) { return tir::add((*a)(i), tir::int_imm(3)); }, "C");
  te::Schedule s({c});
  tir::PrimFunc f = te::lower(s, {a, c}, "plus3");
  Tensor in = Tensor::empty({64, 32}, DType::Int32);
  for (int64_t i = 0; i < in.numel(); ++i) in.data<int32_t>()[i] = int32_t(i * 7 - 1000);
  codegen::PrimRunOptions o;
  o.target = codegen::parse_target("hexagon-v68");
  codegen::PrimRunResult r = codegen::run_prim_function(f, {{"A", in}}, o);
  ASSERT_EQ(r.outputs.size(), 1u);
  const Tensor& out = r.outputs[0].second;
  ASSERT_EQ(out.shape(), (Shape{64, 32}));
  for (int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.data<int32_t>()[i], i * 7 - 1000 + 3) << i;

  std::string dir = std::string(KILN_BINARY_DIR) + "/hexagon-prim-2d";
  std::filesystem::create_directories(dir);
  codegen::CodegenOptions cg;
  cg.target = o.target;
  tir::TirPassOptions passes = codegen::tir_pass_options(cg.target);
  codegen::emit_to_file({tir::lower_for_build(f, passes)}, codegen::EmitKind::Executable, dir + "/plus3.elf",
                        cg);
  write_npy(dir + "/a.npy", in);
  codegen::ProcessResult run = codegen::run_hexagon_executable(
      dir + "/plus3.elf", {"plus3", dir + "/a.npy", "-", "-", dir + "/c.npy"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  Tensor flat = read_npy(dir + "/c.npy");
  ASSERT_EQ(flat.numel(), 2048);
  for (int64_t i = 0; i < flat.numel(); ++i) ASSERT_EQ(flat.data<int32_t>()[i], i * 7 - 1000 + 3) << i;
}

// dot_i8x4, the tensor-IR intrinsic int8 dot products are written with: one
// HVX vrmpy per 32 int32 lanes on Hexagon, widened products elsewhere; the
// values on both against the sums computed here; operand lanes checked.
TEST(HexagonDot, DotI8x4IsOneVrmpyAndMatchesOnBothTargets) {
  const char* text = R"(prim @dot(%A: Buffer[(256), int8], %B: Buffer[(256), int8], %C: Buffer[(64), int32]) {
  for %j from 0 extent 2 {
    %C[ramp(%j * 32, 1, 32)] = dot_i8x4(%C[ramp(%j * 32, 1, 32)], %A[ramp(%j * 128, 1, 128)], %B[ramp(%j * 128, 1, 128)])
  }
})";
  tir::PrimFunc f = tir::parse_prim_functions(text, "dot.kir").at(0);
  Tensor a = Tensor::empty({256}, DType::Int8), b = Tensor::empty({256}, DType::Int8),
         c = Tensor::empty({64}, DType::Int32);
  for (int i = 0; i < 256; ++i) {
    a.data<int8_t>()[i] = int8_t((i * 37 + 5) % 256 - 128);
    b.data<int8_t>()[i] = int8_t((i * 91 + 17) % 256 - 128);
  }
  std::vector<int32_t> want(64);
  for (int i = 0; i < 64; ++i) {
    c.data<int32_t>()[i] = i * 1000 - 30000;
    want[size_t(i)] = c.data<int32_t>()[i];
    for (int k = 0; k < 4; ++k) want[size_t(i)] += a.data<int8_t>()[4 * i + k] * b.data<int8_t>()[4 * i + k];
  }
  for (const char* target : {"llvm", "hexagon-v68"}) {
    SCOPED_TRACE(target);
    codegen::PrimRunOptions o;
    o.target = codegen::parse_target(target);
    codegen::PrimRunResult r = codegen::run_prim_function(f, {{"A", a}, {"B", b}, {"C", c}}, o);
    ASSERT_EQ(r.outputs.size(), 1u);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(r.outputs[0].second.data<int32_t>()[i], want[size_t(i)]) << i;
  }
  codegen::CodegenOptions cg;
  cg.target = codegen::parse_target("hexagon-v68");
  std::string text_asm = codegen::emit_text({tir::lower_for_build(f, codegen::tir_pass_options(cg.target))},
                                            codegen::EmitKind::Assembly, cg);
  EXPECT_NE(text_asm.find(".w += vrmpy(v"), std::string::npos) << text_asm;
  std::string err = testing::error_of([] {
    tir::parse_prim_functions(R"(prim @bad(%A: Buffer[(64), int8], %C: Buffer[(32), int32]) {
  %C[ramp(0, 1, 32)] = dot_i8x4(%C[ramp(0, 1, 32)], %A[ramp(0, 1, 64)], %A[ramp(0, 1, 64)])
})",
                              "bad.kir");
  });
  EXPECT_NE(err.find("operands of four lanes per accumulator lane (128"), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln
