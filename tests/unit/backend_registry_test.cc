// The backend registry: one Backend object per backend, typed options, the
// built-ins registered from their one list.
#include <gtest/gtest.h>

#include "backends/example_npu/runtime/device.h"
#include "backends/hexagon/codegen.h"
#include "backends/registry.h"
#include "driver/build.h"
#include "ir/text.h"
#include "kiln/runtime/backend.h"
#include "runtime/module_file.h"
#include "transform/partition.h"

namespace kiln {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string check(const std::string& backend, const CodegenOptions& options) {
  RunCodegenOptions o;
  o.backend[backend] = options;
  return error_of([&] { check_codegen_options(o, {backend}); });
}

TEST(BackendRegistry, BuiltinsAreRegisteredWithTheirVersionPatternsAndRuntimes) {
  for (const char* name : {"example_npu", "hexagon"}) {
    const Backend* b = find_backend(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(b->version, kKilnVersion);
    EXPECT_FALSE(b->options.empty());
    EXPECT_EQ(pattern_registry().for_backend(name).size(), b->patterns.size());
    EXPECT_NE(make_backend_runtime(name), nullptr) << name;
  }
  std::vector<std::string> names;
  for (const Backend* b : registered_backend_list()) names.push_back(b->name);
  EXPECT_EQ(names, (std::vector<std::string>{"example_npu", "hexagon"}));
}

// The declared defaults are what each backend uses when an option is not given.
TEST(BackendRegistry, DeclaredDefaultsAreTheBackendsOwn) {
  example_npu::DeviceDesc given =
      example_npu::device_from_options(with_defaults(*find_backend("example_npu"), {}));
  example_npu::DeviceDesc none = example_npu::device_from_options({});
  EXPECT_EQ(given.capacity, none.capacity);
  EXPECT_EQ(given.systolic_size, none.systolic_size);
  EXPECT_EQ(given.precision, none.precision);
  CodegenOptions hexagon = with_defaults(*find_backend("hexagon"), {});
  EXPECT_EQ(hexagon::target_from_options(hexagon).name, hexagon::target_from_options({}).name);
  EXPECT_EQ(hexagon::hvx_from_options(hexagon), false);
  EXPECT_EQ(with_defaults(*find_backend("example_npu"), {{"l1", "8K"}}).at("l1"), "8K");
}

TEST(BackendRegistry, OptionsAreCheckedAgainstTheirTypes) {
  EXPECT_EQ(check("example_npu", {{"l1", "64K"}, {"precision", "fp16"}}), "");
  EXPECT_EQ(check("example_npu", {{"l9", "4K"}}),
            "example_npu: unknown option 'l9' (example_npu takes l0=SIZE, l1=SIZE, l2=SIZE, systolic=SIZE, "
            "precision=fp32|fp16|bf16)");
  EXPECT_EQ(check("example_npu", {{"l1", "8Q"}}),
            "example_npu option l1=8Q: expected a positive size such as 4096, 4K or 1M");
  EXPECT_EQ(check("example_npu", {{"l1", "-4K"}}),
            "example_npu option l1=-4K: expected a positive size such as 4096, 4K or 1M");
  EXPECT_EQ(check("example_npu", {{"precision", "fp8"}}),
            "example_npu option precision=fp8: expected fp32, fp16 or bf16");
  // After the types, the backend's own rules.
  EXPECT_EQ(check("example_npu", {{"l0", "1M"}}), "example_npu: memory tiers must grow: l0 <= l1 <= l2");
  EXPECT_EQ(check("hexagon", {{"hvx", "yes"}}), "hexagon option hvx=yes: expected on or off");
  EXPECT_EQ(check("hexagon", {{"timeout", "soon"}}), "hexagon option timeout=soon: expected an integer");
  EXPECT_NE(check("hexagon", {{"target", "v99"}}), "");
  EXPECT_EQ(check("hexagon", {{"target", "v66"}, {"asm", "/tmp/x.s"}}), "");
}

class NullRuntime : public BackendRuntime {
 public:
  std::string name() const override { return "reg_test"; }
  Status init(const std::vector<BackendFunction>&, const std::map<std::string, Tensor>&,
              const std::map<std::string, std::string>&) override {
    return Status::success();
  }
  Status run(const std::string&, const std::vector<Tensor>&, std::vector<Tensor>&,
             std::vector<DispatchEvent>*, const NodeObserver&) override {
    return Status::success();
  }
};

// One call registers everything of a backend; one call removes it.
TEST(BackendRegistry, OneCallRegistersPatternsOptionsCodegenAndRuntime) {
  Backend b;
  b.name = "reg_test";
  b.version = "2.5";
  b.patterns.push_back(
      {"reg_test.relu", annotate("root", is_op("nn.relu", {wildcard()})), nullptr, 3, "relu"});
  b.options.push_back({"mode", OptionType::Choice, "fast", "how", {"fast", "exact"}});
  b.codegen = [](const Module&, const std::vector<Function>&, const CodegenOptions&) {
    return BackendArtifacts{};
  };
  b.runtime = [] { return std::make_unique<NullRuntime>(); };
  register_backend(b);
  ASSERT_NE(find_backend("reg_test"), nullptr);
  EXPECT_EQ(find_backend("reg_test")->version, "2.5");
  ASSERT_NE(pattern_registry().find("reg_test.relu"), nullptr);
  EXPECT_NE(make_backend_runtime("reg_test"), nullptr);
  EXPECT_EQ(check("reg_test", {{"mode", "slow"}}), "reg_test option mode=slow: expected fast or exact");
  EXPECT_EQ(describe_options(*find_backend("reg_test")),
            (std::vector<std::string>{"mode=fast|exact (default fast): how"}));
  unregister_backend("reg_test");
  unregister_backend_runtime("reg_test");
  EXPECT_EQ(find_backend("reg_test"), nullptr);
  EXPECT_EQ(pattern_registry().find("reg_test.relu"), nullptr);

  Backend bad = b;
  bad.patterns[0].name = "other.relu";
  EXPECT_EQ(error_of([&] { register_backend(bad); }),
            "backend reg_test: pattern other.relu must be named reg_test.<pattern>");
  EXPECT_EQ(find_backend("reg_test"), nullptr);
}

// The .kmod records each backend's version, and keeps an artifact in a
// backend's own binary format byte for byte (a plugin's).
TEST(BackendRegistry, KmodKeepsTheVersionAndBinaryArtifacts) {
  Module m = parse_module(R"(
def @main(%x: Tensor[(2, 4), float32]) -> Tensor[(2, 4), float32] {
  %y = nn.relu(%x)
  %z = exp(%y)
  return %z
}
)",
                          "v.kir");
  PartitionOptions o;
  o.backends = {"example_npu"};
  Executable exe = build_executable(partition_module(m, o, true, nullptr));
  ASSERT_EQ(exe.backends.size(), 1u);
  EXPECT_EQ(exe.backends[0].version, kKilnVersion);
  BackendFunction& f = exe.backends[0].functions.at(0);
  f.graph = f.artifact;
  for (size_t n : {0, 1, 2, 3, 256}) {
    std::string bytes;
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>((i * 37 + 200) & 0xff));
    f.artifact = bytes;
    exe.backends[0].version = "7.1-beta";
    Executable back = decode_kmod(encode_kmod(exe), "v.kmod");
    EXPECT_EQ(back.backends[0].version, "7.1-beta");
    EXPECT_EQ(back.backends[0].functions.at(0).artifact, bytes) << n << " bytes";
    EXPECT_EQ(back.backends[0].functions.at(0).graph, f.graph);
  }
}

}  // namespace
}  // namespace kiln
