// Standard input and output, pipes and output names, as a script uses them:
// `-` is standard input for models and standard output for text outputs (and
// a .kmod), a pipe is read once, `-o /dev/null` discards, and every command
// that writes a file takes -o, --out and --output alike.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "kiln/runtime/npy.h"

namespace kiln {
namespace {

using Result = testing::CliResult;
using testing::kiln_cmd;

class CliStreams : public testing::CliTest {
 protected:
  CliStreams() : CliTest("cli-streams-test") {}
  // The command run in the scratch folder, so a stray file named "-" would be found there.
  Result in_dir(const std::string& args) {
    return kiln_cmd_line("cd " + dir_.string() + " && " + std::string(KILN_BINARY_DIR) + "/kiln " + args);
  }
  static Result kiln_cmd_line(const std::string& line) {
    Result r;
    FILE* p = popen(("(" + line + ") 2>&1").c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
  }
  std::string kiln() const { return std::string(KILN_BINARY_DIR) + "/kiln"; }
};

bool has(const Result& r, const std::string& needle) { return r.out.find(needle) != std::string::npos; }

// Big enough (108 weights) that saving it names the constant and writes a side file.
const char* kModel = R"(
def @main(%x: Tensor[(1, 3, 8, 8), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %c = nn.conv2d(%x, const(Tensor[(4, 3, 3, 3), float32], [-0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3]), padding=[1, 1, 1, 1])
  %r = nn.relu(%c)
  %e = exp(%r)
  return %e
}
)";

const char* kPrim = R"(
prim @add_one(%A: Buffer[(4), float32], %B: Buffer[(4), float32]) {
  for %i0 from 0 extent 4 {
    %B[%i0] = %A[%i0] + %A[%i0]
  }
  return 0
}
)";

// The "output_0: ..." line and the values kiln run prints.
std::string outputs_of(const Result& r) {
  auto at = r.out.find("output_0");
  return at == std::string::npos ? "" : r.out.substr(at);
}

const std::string kOnnxNodes = "/usr/share/libonnx-testdata/data/node";

TEST_F(CliStreams, RunReadsAModelFromStandardInput) {
  std::string model = file("m.kir", kModel);
  Result from_file = kiln_cmd("run " + model + " --random-inputs 3");
  ASSERT_EQ(from_file.code, 0) << from_file.out;
  Result from_stdin = kiln_cmd("run - --random-inputs 3 < " + model);
  ASSERT_EQ(from_stdin.code, 0) << from_stdin.out;
  EXPECT_FALSE(outputs_of(from_file).empty()) << from_file.out;
  EXPECT_EQ(outputs_of(from_stdin), outputs_of(from_file));
  // A compiled module and an ONNX model are told apart by their content.
  ASSERT_EQ(kiln_cmd("compile " + model + " -b example_npu -o " + path("m.kmod")).code, 0);
  Result kmod = kiln_cmd("run - --random-inputs 3 < " + path("m.kmod"));
  ASSERT_EQ(kmod.code, 0) << kmod.out;
  EXPECT_EQ(outputs_of(kmod), outputs_of(from_file));
  std::string onnx = kOnnxNodes + "/test_softmax_axis_1/model.onnx";
  Result onnx_file = kiln_cmd("run " + onnx + " --random-inputs 1");
  Result onnx_stdin = kiln_cmd("run - --random-inputs 1 < " + onnx);
  ASSERT_EQ(onnx_stdin.code, 0) << onnx_stdin.out;
  EXPECT_EQ(outputs_of(onnx_stdin), outputs_of(onnx_file));
  // Errors name standard input.
  Result bad = kiln_cmd("run - --random-inputs 1 < " + file("bad.kir", "def @main(%x) {"));
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_TRUE(has(bad, "error: standard input:1:")) << bad.out;
}

TEST_F(CliStreams, AnInputCanComeFromStandardInput) {
  std::string model = file("m.kir", kModel);
  Tensor x = Tensor::empty({1, 3, 8, 8}, DType::Float32);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_from_double(i, double(i % 7) * 0.25 - 0.5);
  write_npy(path("x.npy"), x);
  Result from_file = kiln_cmd("run " + model + " --input x=" + path("x.npy") + " --print-limit 300");
  ASSERT_EQ(from_file.code, 0) << from_file.out;
  Result from_stdin = kiln_cmd("run " + model + " --input x=- --print-limit 300 < " + path("x.npy"));
  ASSERT_EQ(from_stdin.code, 0) << from_stdin.out;
  EXPECT_FALSE(outputs_of(from_file).empty()) << from_file.out;
  EXPECT_EQ(outputs_of(from_stdin), outputs_of(from_file));
  // Prim functions too.
  std::string prim = file("p.kir", kPrim);
  Tensor a = Tensor::empty({4}, DType::Float32);
  for (int64_t i = 0; i < 4; ++i) a.set_from_double(i, double(i) + 0.5);
  write_npy(path("a.npy"), a);
  Result p = kiln_cmd("run " + prim + " --input A=- < " + path("a.npy"));
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_TRUE(has(p, "[1, 3, 5, 7]")) << p.out;
  // One reader of standard input; not a .npy there is an error naming it.
  Result twice = kiln_cmd("run - --input x=- < " + model);
  EXPECT_EQ(twice.code, 1) << twice.out;
  EXPECT_TRUE(has(twice, "error: standard input can hold the model or one --input NAME=-, not 2"))
      << twice.out;
  Result garbage = kiln_cmd("run " + model + " --input x=- < " + model);
  EXPECT_EQ(garbage.code, 1) << garbage.out;
  EXPECT_TRUE(has(garbage, "standard input")) << garbage.out;
}

TEST_F(CliStreams, APipedModuleIsReadOnce) {
  // is_kmod_file once read the first 8 bytes of a pipe, and the loader then
  // found the magic number missing.
  std::string model = file("m.kir", kModel);
  ASSERT_EQ(kiln_cmd("compile " + model + " -b example_npu -o " + path("m.kmod")).code, 0);
  std::string fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result r = kiln_cmd_line("cat " + path("m.kmod") + " > " + fifo + " & " + kiln() + " run " + fifo +
                           " --random-inputs 3; wait");
  EXPECT_EQ(r.code, 0) << r.out;
  Result expected = kiln_cmd("run " + path("m.kmod") + " --random-inputs 3");
  EXPECT_EQ(outputs_of(r), outputs_of(expected)) << r.out;
  // A .kir through a pipe, too.
  Result kir = kiln_cmd_line("cat " + model + " > " + fifo + " & " + kiln() + " run " + fifo +
                             " --random-inputs 3; wait");
  EXPECT_EQ(kir.code, 0) << kir.out;
  EXPECT_EQ(outputs_of(kir), outputs_of(expected)) << kir.out;
}

TEST_F(CliStreams, DashIsStandardOutputForTextAndModules) {
  std::string model = file("m.kir", kModel);
  // compile -o - | run -: the summary goes to stderr, the .kmod to stdout.
  Result piped = kiln_cmd_line(kiln() + " compile " + model + " -b example_npu -o - 2>/dev/null | " + kiln() +
                               " run - --random-inputs 3");
  EXPECT_EQ(piped.code, 0) << piped.out;
  Result expected = kiln_cmd("run " + model + " --random-inputs 3");
  EXPECT_EQ(outputs_of(piped), outputs_of(expected)) << piped.out;
  // partition -o - prints the module alone: it parses back (kiln opt - reads it).
  Result part = kiln_cmd_line(kiln() + " partition " + model + " -b example_npu -o - 2>/dev/null | " +
                              kiln() + " opt - --passes dead-code-elimination");
  EXPECT_EQ(part.code, 0) << part.out;
  EXPECT_TRUE(has(part, "Codegen=\"example_npu\"") || has(part, "Codegen = \"example_npu\"")) << part.out;
  Result report = kiln_cmd_line(kiln() + " partition " + model + " -b example_npu --report - 2>/dev/null");
  ASSERT_EQ(report.code, 0) << report.out;
  EXPECT_TRUE(has(report, "\"ops\"") || has(report, "\"summary\"")) << report.out;
  // build --emit ll -o -: LLVM IR on stdout, no file named "-".
  std::string prim = file("p.kir", kPrim);
  Result ll = in_dir("build " + prim + " --emit ll -o -");
  EXPECT_EQ(ll.code, 0) << ll.out;
  EXPECT_TRUE(has(ll, "define")) << ll.out;
  EXPECT_TRUE(has(ll, "add_one")) << ll.out;
  // import -o -: the .kir text with every constant inline.
  Result imported = in_dir("import " + kOnnxNodes + "/test_conv_with_strides_padding/model.onnx -o -");
  EXPECT_EQ(imported.code, 0) << imported.out;
  EXPECT_TRUE(has(imported, "nn.conv2d")) << imported.out;
  Result opt = in_dir("opt " + model + " --passes dead-code-elimination -o -");
  EXPECT_EQ(opt.code, 0) << opt.out;
  EXPECT_TRUE(has(opt, "nn.relu")) << opt.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "-"));
}

TEST_F(CliStreams, DevNullDiscardsEveryOutput) {
  std::error_code ec;
  if (std::filesystem::is_regular_file("/dev/null.npz", ec)) std::filesystem::remove("/dev/null.npz", ec);
  std::string model = file("m.kir", kModel);
  Result run = kiln_cmd("run " + model + " --random-inputs 1 -o /dev/null");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_TRUE(has(run, "output_0: ")) << run.out;
  Result opt = kiln_cmd("opt " + model + " --passes dead-code-elimination -o /dev/null");
  EXPECT_EQ(opt.code, 0) << opt.out;
  Result imported =
      kiln_cmd("import " + kOnnxNodes + "/test_conv_with_strides_padding/model.onnx -o /dev/null");
  EXPECT_EQ(imported.code, 0) << imported.out;
  std::string prim = file("p.kir", kPrim);
  for (const char* emit : {"ll", "obj", "so"}) {
    Result b = kiln_cmd("build " + prim + " --emit " + std::string(emit) + " -o /dev/null");
    EXPECT_EQ(b.code, 0) << emit << "\n" << b.out;
    EXPECT_FALSE(has(b, "filesystem error")) << b.out;
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/null.npz"));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  // A file where run wants a folder is an error that says so.
  Result not_folder = kiln_cmd("run " + model + " --random-inputs 1 -o " + model);
  EXPECT_EQ(not_folder.code, 1) << not_folder.out;
  EXPECT_TRUE(has(not_folder, "error: kiln run --output " + model + ": not a folder")) << not_folder.out;
}

TEST_F(CliStreams, EveryCommandTakesOOutAndOutput) {
  std::string model = file("m.kir", kModel);
  std::string prim = file("p.kir", kPrim);
  std::string onnx = kOnnxNodes + "/test_conv_with_strides_padding/model.onnx";
  for (const char* flag : {"-o", "--out", "--output"}) {
    std::string f = flag;
    std::string tag = f.substr(f.find_first_not_of('-'));
    struct Case {
      std::string args, written;
    };
    std::vector<Case> cases = {
        {"run " + model + " --random-inputs 1 " + f + " " + path("run-" + tag),
         "run-" + tag + "/output_0.npy"},
        {"compile " + model + " " + f + " " + path(tag + ".kmod"), tag + ".kmod"},
        {"partition " + model + " -b example_npu " + f + " " + path("part-" + tag + ".kir"),
         "part-" + tag + ".kir"},
        {"import " + onnx + " " + f + " " + path("imp-" + tag + ".kir"), "imp-" + tag + ".kir"},
        {"opt " + model + " --passes dead-code-elimination " + f + " " + path("opt-" + tag + ".kir"),
         "opt-" + tag + ".kir"},
        {"build " + prim + " --emit obj " + f + " " + path(tag + ".o"), tag + ".o"},
    };
    for (const auto& c : cases) {
      Result r = kiln_cmd(c.args);
      EXPECT_EQ(r.code, 0) << c.args << "\n" << r.out;
      EXPECT_TRUE(std::filesystem::is_regular_file(dir_ / c.written)) << c.args << "\n" << r.out;
    }
  }
  // The shared library is executable, like the linker makes it.
  ASSERT_EQ(kiln_cmd("build " + prim + " --emit so -o " + path("p.so")).code, 0);
  struct stat st {};
  ASSERT_EQ(::stat(path("p.so").c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);
}

TEST_F(CliStreams, PartitionNamesItsWeightsAfterTheOutput) {
  std::string model = file("m0.kir", kModel);
  // m.kir with its weights in m.npz (the module attribute weights = "m.npz").
  ASSERT_EQ(kiln_cmd("opt " + model + " --passes dead-code-elimination -o " + path("m.kir")).code, 0);
  ASSERT_TRUE(std::filesystem::exists(dir_ / "m.npz"));
  std::filesystem::create_directories(dir_ / "sub");
  Result r = kiln_cmd("partition " + path("m.kir") + " -b example_npu -o " + path("sub/out.kir"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "sub/out.npz"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "sub/m.npz"));
  EXPECT_TRUE(has(Result{0, testing::read_text(path("sub/out.kir"))}, "weights = \"out.npz\"") ||
              has(Result{0, testing::read_text(path("sub/out.kir"))}, "weights=\"out.npz\""))
      << testing::read_text(path("sub/out.kir"));
  // The partitioned module runs from its own files.
  Result run = kiln_cmd("run " + path("sub/out.kir") + " --random-inputs 3 -b example_npu");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(outputs_of(run), outputs_of(kiln_cmd("run " + model + " --random-inputs 3")));
}

}  // namespace
}  // namespace kiln
