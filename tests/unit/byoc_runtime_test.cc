// The runtime side of bring-your-own-codegen: the kiln.graph format, the
// .kmod artifact (round trip, truncation, corruption, versions), the VM, and
// a second tiny backend ("tiny_add", claiming only `add`) next to example_npu
// in one model, with --verify finding a deliberately wrong node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <sstream>

#include "backends/graph_codegen.h"
#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "op/op.h"
#include "pattern/registry.h"
#include "runtime/file_io.h"
#include "runtime/graph_exec.h"
#include "runtime/module_file.h"
#include "runtime/profile.h"
#include "runtime/vm.h"
#include "test_util.h"

namespace kiln {
namespace {

// The example NPU alone (an empty list would let every registered backend claim).
PartitionOptions example_npu_only() {
  PartitionOptions o;
  o.backends = {"example_npu"};
  return o;
}

using testing::error_of;

Tensor ramp(const Shape& shape, float start, float step) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * static_cast<float>(i);
  return Tensor::from_floats(shape, v);
}

// ---- the second backend: claims `add`, runs it with the reference kernel;
// with option wrong=1 it adds 1 to every result (to exercise --verify).
class TinyAddRuntime final : public BackendRuntime {
 public:
  std::string name() const override { return "tiny_add"; }
  Status init(const std::vector<BackendFunction>& functions, const std::map<std::string, Tensor>& constants,
              const std::map<std::string, std::string>& options) override {
    wrong_ = options.count("wrong") && options.at("wrong") == "1";
    constants_ = constants;
    for (const auto& f : functions) {
      try {
        graphs_[f.symbol] = graph_from_json(f.artifact, "tiny_add " + f.symbol);
      } catch (const Error& e) {
        return Status::error(e.message());
      }
    }
    return Status::success();
  }
  Status run(const std::string& symbol, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
             std::vector<DispatchEvent>* events, const NodeObserver& observer) override {
    GraphRunHooks hooks;
    hooks.observer = [&](const std::string& node, const Tensor& v) {
      if (wrong_) bump(const_cast<Tensor&>(v));
      if (observer) observer(node, v);
    };
    std::vector<Tensor> out = execute_graph(graphs_.at(symbol), inputs, constants_, hooks);
    for (size_t i = 0; i < out.size(); ++i) std::memcpy(outputs[i].raw(), out[i].raw(), out[i].nbytes());
    if (events)
      events->push_back(
          DispatchEvent{"tiny_add", symbol, symbol, "add", "ADDER", {}, {}, 1, false, {}, 1, 0, 0});
    return Status::success();
  }

 private:
  static void bump(Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, t.get_as_double(i) + 1);
  }
  bool wrong_ = false;
  std::map<std::string, Graph> graphs_;
  std::map<std::string, Tensor> constants_;
};

// What the tiny backend's codegen saw, for the RunCodegen tests.
int codegen_calls = 0;
int codegen_functions = 0;
CodegenOptions codegen_options;

class TwoBackends : public ::testing::Test {
 protected:
  void SetUp() override {
    pattern_registry().add({"tiny_add.add", annotate("root", is_op("add", {wildcard(), wildcard()})), nullptr,
                            50, "add on the tiny adder"});
    codegen_calls = 0;
    codegen_functions = 0;
    codegen_options.clear();
    register_backend_codegen(
        {"tiny_add", "kiln.graph",
         [](const Module& m, const std::vector<Function>& fns, const CodegenOptions& options) {
           ++codegen_calls;
           codegen_functions += static_cast<int>(fns.size());
           codegen_options = options;
           BackendArtifacts a;
           GraphLowering state;
           for (const auto& f : fns) {
             std::string sym = f->attrs.get_string("global_symbol");
             a.artifacts[sym] = graph_to_json(lower_to_graph(m, *f, sym, state));
           }
           a.constants = state.constants;
           return a;
         }});
    register_backend_runtime("tiny_add", [] { return std::make_unique<TinyAddRuntime>(); });
  }
  void TearDown() override {
    pattern_registry().remove_backend("tiny_add");
    remove_backend_codegen("tiny_add");
    unregister_backend_runtime("tiny_add");
  }
};

const char* kTwoBackendModel = R"(
def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 4), float32]) -> Tensor[(2, 4), float32] {
  %y = matmul(%x, %w)
  %r = nn.relu(%y)
  %a = add(%r, %x)
  %e = exp(%a)
  %s = sigmoid(%e)
  return %s
}
)";

TEST_F(TwoBackends, OneModelTwoBackendsAndTheHost) {
  Module m = parse_module(kTwoBackendModel, "two.kir");
  PartitionOptions opts;
  opts.backends = {"example_npu", "tiny_add"};
  PartitionReport report;
  Module parted = partition_module(m, opts, true, &report);
  EXPECT_EQ(report.find("main", "y")->backend, "example_npu");
  EXPECT_EQ(report.find("main", "a")->backend, "tiny_add");
  EXPECT_EQ(report.find("main", "e")->reason, "no pattern matched");
  EXPECT_EQ(report.find("main", "s")->backend, "example_npu");
  EXPECT_EQ(report.summary(),
            "4 of 5 ops offloaded in 3 regions (example_npu: 3, tiny_add: 1); 1 on the host");
  // Only the named backends are used: example_npu alone does not see tiny_add.
  PartitionOptions npu_only;
  npu_only.backends = {"example_npu"};
  PartitionReport r2;
  partition_module(m, npu_only, true, &r2);
  EXPECT_EQ(r2.find("main", "a")->backend, "example_npu");

  Executable exe = build_executable(parted);
  ASSERT_EQ(exe.backends.size(), 2u);
  VirtualMachine vm(exe);
  Tensor x = ramp({2, 4}, -1.0f, 0.25f), w = ramp({4, 4}, 0.5f, -0.1f);
  VirtualMachine::RunOptions ro;
  ro.record_events = true;
  ro.verify = true;
  RunResult run = vm.run({x, w}, ro);
  const std::vector<Tensor>& got = run.outputs;
  std::vector<Tensor> want = interpret(m, "main", {x, w});
  for (int64_t i = 0; i < want[0].numel(); ++i)
    EXPECT_NEAR(got[0].get_as_double(i), want[0].get_as_double(i), 1e-6);
  std::set<std::string> tracks;
  for (const auto& e : run.events) tracks.insert(e.backend);
  EXPECT_EQ(tracks, (std::set<std::string>{"example_npu", "host", "tiny_add"}));
  ASSERT_EQ(run.checks.size(), 3u);
  for (const auto& c : run.checks) EXPECT_TRUE(c.ok) << c.str();
  // The trace has one track per backend plus the host.
  std::string trace = chrome_trace(run.events);
  EXPECT_NE(trace.find("\"name\": \"tiny_add\""), std::string::npos);
  EXPECT_NE(trace.find("\"name\": \"host\""), std::string::npos);
  std::string log = dispatch_log(run.events);
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 3);
}

TEST_F(TwoBackends, VerifyFindsTheFirstDivergentNode) {
  Module m = parse_module(kTwoBackendModel, "two.kir");
  PartitionOptions opts;
  opts.backends = {"example_npu", "tiny_add"};
  Module parted = partition_module(m, opts, true, nullptr);
  RunCodegenOptions cg;
  cg.backend["tiny_add"] = {{"wrong", "1"}};
  VirtualMachine vm(build_executable(parted, "main", cg));
  VirtualMachine::RunOptions ro;
  ro.verify = true;
  RunResult run = vm.run({ramp({2, 4}, 0, 1), ramp({4, 4}, 0, 0.5f)}, ro);
  const RegionCheck* bad = nullptr;
  for (const auto& c : run.checks)
    if (!c.ok) bad = &c;
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->backend, "tiny_add");
  EXPECT_DOUBLE_EQ(bad->max_abs, 1.0);
  EXPECT_EQ(bad->first_divergent_node, "a");
  EXPECT_NE(bad->str().find("MISMATCH; first divergent node: a"), std::string::npos) << bad->str();
}

TEST_F(TwoBackends, RunCodegenCallsEachBackendOnceWithAllItsRegions) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] {
  %a = add(%x, %x)
  %e = exp(%a)
  %b = add(%e, %x)
  %l = log(%b)
  %c = add(%l, %l)
  return %c
}
)",
                          "adds.kir");
  PartitionOptions opts;
  opts.backends = {"tiny_add"};
  Module parted = partition_module(m, opts, true, nullptr);
  RunCodegenOptions cg;
  cg.global = {{"level", "1"}};
  cg.backend["tiny_add"] = {{"level", "2"}, {"mode", "fast"}};
  std::map<std::string, BackendArtifacts> out;
  Module done = run_codegen(parted, cg, &out);
  EXPECT_EQ(codegen_calls, 1);
  EXPECT_EQ(codegen_functions, 3);
  EXPECT_EQ(codegen_options, (CodegenOptions{{"level", "2"}, {"mode", "fast"}}));
  EXPECT_EQ(out.at("tiny_add").artifacts.size(), 3u);
  EXPECT_EQ(done.attrs.get_string("external_symbols"), "tiny_add_main_0 tiny_add_main_1 tiny_add_main_2");
  // Values: ((2x).exp + x).log doubled, on the tiny backend and the host.
  VirtualMachine vm(build_executable(parted));
  Tensor x = Tensor::from_floats({4}, {0.0f, 0.5f, -0.1f, 1.0f});
  std::vector<Tensor> got = vm.run({x});
  for (int i = 0; i < 4; ++i) {
    double v = x.data<float>()[i];
    EXPECT_NEAR(got[0].get_as_double(i), 2 * std::log(std::exp(2 * v) + v), 1e-5);
  }
}

// ---- the kiln.graph format

Graph small_graph() {
  Graph g;
  g.name = "f";
  g.inputs = {{"x", {{2, 3}, DType::Float32}}};
  g.constants = {{"k", {{3}, DType::Float32}}};
  GraphNode add;
  add.name = "y";
  add.op = "add";
  add.inputs = {"x", "k"};
  add.outputs = {{"y", {{2, 3}, DType::Float32}}};
  GraphNode clip;
  clip.name = "z";
  clip.op = "clip";
  clip.inputs = {"y"};
  clip.outputs = {{"z", {{2, 3}, DType::Float32}}};
  clip.attrs = Attrs{{"a_min", -0.5}, {"a_max", 2.0}};
  clip.group = 0;
  clip.pattern = "example_npu.clip";
  g.nodes = {add, clip};
  g.outputs = {"z"};
  return g;
}

TEST(GraphFormat, RoundTripKeepsAttributesAndRuns) {
  std::string text = graph_to_json(small_graph());
  EXPECT_NE(text.find("\"format\": \"kiln.graph\""), std::string::npos);
  EXPECT_NE(text.find("\"version\": 1"), std::string::npos);
  Graph g = graph_from_json(text, "g.json");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_DOUBLE_EQ(g.nodes[1].attrs.get_float("a_min"), -0.5);
  EXPECT_EQ(g.nodes[1].pattern, "example_npu.clip");
  EXPECT_EQ(graph_to_json(g), text);
  std::vector<Tensor> out = execute_graph(g, {ramp({2, 3}, -1, 0.5f)}, {{"k", ramp({3}, 0, 0.25f)}});
  // x = -1, -0.5, 0, 0.5, 1, 1.5; k = 0, 0.25, 0.5 -> clip(x + k, -0.5, 2)
  std::vector<double> want = {-0.5, -0.25, 0.5, 0.5, 1.25, 2.0};
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(out[0].get_as_double(i), want[i]);
}

// The reference run of a graph runs its op nodes; a node that calls a
// compiled kernel or an offloaded function (which only the VM runs) is an
// error naming it, not a crash.
TEST(GraphFormat, ReferenceRunRefusesKernelAndCalleeNodes) {
  for (const char* field : {"kernel", "callee"}) {
    Graph g = small_graph();
    (std::string(field) == "kernel" ? g.nodes[1].kernel : g.nodes[1].callee) = "kiln_elsewhere";
    const std::string error = testing::error_of([&] {
      execute_graph(g, {ramp({2, 3}, -1, 0.5f)}, {{"k", ramp({3}, 0, 0.25f)}});
    });
    EXPECT_NE(error.find("calls kiln_elsewhere, which only the VM runs"), std::string::npos) << error;
  }
}

TEST(GraphFormat, ConvAttributesSurvive) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(2, 1, 3, 3), float32]) -> Tensor[(1, 2, 3, 3), float32] {
  %y = nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], groups=2)
  return %y
}
)",
                          "c.kir");
  GraphLowering state;
  Graph g = graph_from_json(graph_to_json(lower_to_graph(m, *m.find("main"), "g", state)), "g");
  const Attrs& a = g.nodes[0].attrs;
  EXPECT_EQ(a.get_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a.get_ints("padding"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(a.get_int("groups"), 2);
  EXPECT_EQ(a.get_ints("dilation"), (std::vector<int64_t>{1, 1}));
}

TEST(GraphFormat, RejectsUnknownVersionAndMalformedGraphs) {
  std::string text = graph_to_json(small_graph());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  EXPECT_NE(error_of([&] {
              graph_from_json(replaced("\"version\": 1", "\"version\": 7"), "g.json");
            }).find("g.json: kiln.graph version 7 is not supported (this kiln reads version 1)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              graph_from_json(replaced("\"kiln.graph\"", "\"onnx\""), "g.json");
            }).find("\"format\" must be \"kiln.graph\""),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              graph_from_json(replaced("\"op\": \"clip\"", "\"op\": \"clipp\""), "g.json");
            }).find("node z: unknown op 'clipp'"),
            std::string::npos);
  Graph undefined = small_graph();
  undefined.nodes[1].inputs = {"q"};
  EXPECT_NE(error_of([&] {
              graph_from_json(graph_to_json(undefined), "g.json");
            }).find("node z: input 'q' is not defined before use"),
            std::string::npos);
  Graph wrong_type = small_graph();
  wrong_type.nodes[0].outputs[0].desc.shape = {3, 2};
  EXPECT_NE(error_of([&] {
              graph_from_json(graph_to_json(wrong_type), "g.json");
            }).find("node y: recorded output types differ from add's inference"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              graph_from_json(replaced("\"a_min\": -0.5", "\"a_mn\": -0.5"), "g.json");
            }).find("unknown attribute 'a_mn'"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { graph_from_json(text.substr(0, text.size() / 2), "g.json"); }).find("not valid JSON"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              graph_from_json("{\"format\": \"kiln.graph\", \"version\": 1}", "g.json");
            }).find("missing \"name\""),
            std::string::npos);
}

TEST(GraphFormat, BackendInitReportsBadArtifactsAsValues) {
  std::unique_ptr<BackendRuntime> rt = make_backend_runtime("example_npu");
  ASSERT_NE(rt, nullptr);
  std::string text = graph_to_json(small_graph());
  std::string v2 = text;
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 2");
  Status s = rt->init({{"f", v2}}, {{"k", ramp({3}, 0, 1)}}, {});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("version 2 is not supported"), std::string::npos) << s.message;
  s = rt->init({{"f", text}}, {}, {});
  EXPECT_NE(s.message.find("needs constant 'k'"), std::string::npos) << s.message;
  s = rt->init({{"f", text}}, {{"k", ramp({3}, 0, 1)}}, {});
  EXPECT_TRUE(s.ok()) << s.message;
  std::vector<Tensor> outs = {Tensor::empty({2, 3}, DType::Float32)};
  s = rt->run("g", {ramp({2, 3}, 0, 1)}, outs, nullptr, nullptr);
  EXPECT_NE(s.message.find("no function 'g'"), std::string::npos);
  // Caller-owned output memory is written in place.
  std::vector<float> buffer(6, -9.0f);
  std::vector<Tensor> wrapped = {Tensor::wrap(buffer.data(), {2, 3}, DType::Float32)};
  s = rt->run("f", {ramp({2, 3}, 0, 0.25f)}, wrapped, nullptr, nullptr);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_FLOAT_EQ(buffer[5], 2.0f);  // clip(1.25 + 2, -0.5, 2)
  EXPECT_FLOAT_EQ(buffer[0], 0.0f);
}

// ---- the .kmod artifact

Executable small_executable() {
  Module m = parse_module(R"(
def @main(%x: Tensor[(2, 4), float32]) -> Tensor[(2, 4), float32] {
  %y = matmul(%x, const(Tensor[(4, 4), float32], [1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.5]))
  %z = nn.relu(%y)
  %e = exp(%z)
  return %e
}
)",
                          "k.kir");
  return build_executable(partition_module(m, example_npu_only(), true, nullptr));
}

TEST(Kmod, SavesAndLoadsBack) {
  Executable exe = small_executable();
  std::string bytes = encode_kmod(exe);
  Executable back = decode_kmod(bytes, "m.kmod");
  EXPECT_EQ(encode_kmod(back), bytes);
  ASSERT_EQ(back.backends.size(), 1u);
  EXPECT_EQ(back.backends[0].backend, "example_npu");
  VirtualMachine vm(back);
  Tensor x = ramp({2, 4}, -1, 0.5f);
  std::vector<Tensor> out = vm.run({x});
  // x row 0 = -1, -0.5, 0, 0.5 -> diag(1, 2, -1, 0.5) -> relu -> exp
  std::vector<double> want = {1.0, 1.0, 1.0, std::exp(0.25)};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[0].get_as_double(i), want[i], 1e-6);
  std::string path = std::string(KILN_BINARY_DIR) + "/byoc_test.kmod";
  write_kmod(path, exe);
  EXPECT_TRUE(is_kmod_file(path));
  EXPECT_EQ(encode_kmod(read_kmod(path)), bytes);
}

TEST(Kmod, TruncatedFilesAreClearErrors) {
  std::string bytes = encode_kmod(small_executable());
  for (size_t n : {size_t{0}, size_t{5}, size_t{12}, size_t{20}, bytes.size() / 2, bytes.size() - 3}) {
    std::string err = error_of([&] { decode_kmod(bytes.substr(0, n), "t.kmod"); });
    EXPECT_NE(err.find("t.kmod: truncated .kmod file"), std::string::npos) << n << ": " << err;
  }
}

TEST(Kmod, CorruptedFilesAreClearErrors) {
  std::string bytes = encode_kmod(small_executable());
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x5a;
  EXPECT_NE(
      error_of([&] { decode_kmod(flipped, "c.kmod"); }).find("checksum mismatch: the file is corrupted"),
      std::string::npos);
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_NE(error_of([&] { decode_kmod(magic, "c.kmod"); }).find("not a .kmod file"), std::string::npos);
  std::string version = bytes;
  version[8] = 9;
  EXPECT_NE(error_of([&] { decode_kmod(version, "c.kmod"); }).find(".kmod format version 9 is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([&] { decode_kmod(bytes + "xx", "c.kmod"); }).find("unexpected bytes at the end"),
            std::string::npos);
}

// Every byte of the file is covered: by the checksum, or (the magic, the
// version, the lengths, the checksum itself) by its own check.
TEST(Kmod, EveryFlippedByteIsAnError) {
  std::string bytes = encode_kmod(small_executable());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x01;
    std::string err = error_of([&] { decode_kmod(flipped, "f.kmod"); });
    ASSERT_EQ(err.rfind("f.kmod: ", 0), 0u) << "byte " << i << ": " << err;
  }
}

// True when `p` lies in a mapping of a file whose path ends with `suffix`
// (/proc/self/maps).
bool in_mapping_of(const void* p, const std::string& suffix) {
  std::istringstream maps(read_file("/proc/self/maps"));
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < suffix.size() || line.compare(line.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    uintptr_t begin = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    uintptr_t end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    if (at >= begin && at < end) return true;
  }
  return false;
}

// The data section starts at a multiple of 64 bytes, so a loaded file's
// constants are used where they lie in the mapping; writing one copies its
// page and leaves the file as it was.
TEST(Kmod, ALoadedFilesConstantsAreUsedInPlace) {
  Executable exe = small_executable();
  std::string bytes = encode_kmod(exe);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data() + 12, 8);
  EXPECT_EQ((8 + 4 + 8 + header_length + 8) % 64, 0u);
  std::string path = std::string(KILN_BINARY_DIR) + "/in_place.kmod";
  write_kmod(path, exe);
  Executable loaded = read_kmod(path);
  ASSERT_FALSE(loaded.constants.empty());
  for (auto& [name, t] : loaded.constants) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment, 0u) << name;
    EXPECT_TRUE(t.bitwise_equal(exe.constants.at(name))) << name;
    EXPECT_TRUE(in_mapping_of(t.raw(), "/in_place.kmod")) << name << " is a copy";
  }
  Tensor x = ramp({2, 4}, -1, 0.5f);
  EXPECT_TRUE(VirtualMachine(loaded).run({x})[0].bitwise_equal(VirtualMachine(exe).run({x})[0]));
  Tensor& w = loaded.constants.begin()->second;
  w.set_from_double(0, 42.0);
  EXPECT_EQ(read_file(path), bytes);
  EXPECT_EQ(w.get_as_double(0), 42.0);
}

// read_kmod maps a file; what cannot be mapped is still a clear error.
TEST(Kmod, FilesThatCannotBeMappedAreClearErrors) {
  const std::string dir = std::string(KILN_BINARY_DIR);
  write_file(dir + "/empty.kmod", "");
  EXPECT_NE(error_of([&] { read_kmod(dir + "/empty.kmod"); }).find("empty.kmod: truncated .kmod file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_kmod(dir); }).find("is a folder, not a file"), std::string::npos);
  EXPECT_NE(error_of([&] { read_kmod(dir + "/no_such.kmod"); }).find("cannot open .kmod module"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_kmod("/dev/zero"); }).find("not a regular file"), std::string::npos);
}

TEST(Kmod, MissingBackendRuntimeIsAnError) {
  Executable exe = small_executable();
  exe.backends[0].backend = "warp_drive";
  EXPECT_NE(error_of([&] {
              VirtualMachine vm(exe);
            }).find("module needs backend runtime 'warp_drive', which this runtime does not have"),
            std::string::npos);
}

TEST(Kmod, WrongInputIsAnError) {
  VirtualMachine vm(small_executable());
  EXPECT_NE(error_of([&] {
              vm.run({ramp({2, 5}, 0, 1)});
            }).find("input 'x' must be Tensor[(2, 4), float32]"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
