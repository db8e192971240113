// The files `kiln` reads and writes, as a script sees them: outputs written
// atomically (two runs writing one --profile leave valid JSON), /dev/null as
// a destination, inputs refused by size or kind before they are read, and
// sizes checked before allocating, naming the input (docs/limits.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace kiln {
namespace {

using Result = testing::CliResult;
using testing::kiln_cmd;

class CliFiles : public testing::CliTest {
 protected:
  CliFiles() : CliTest("cli-files-test") {}
};

bool has(const Result& r, const std::string& needle) { return r.out.find(needle) != std::string::npos; }

void expect_error(const std::string& args, const std::string& message) {
  Result r = kiln_cmd(args);
  EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
  EXPECT_TRUE(has(r, "error: " + message)) << args << "\n" << r.out;
}

const char* kNpuModel = R"(
def @main(%x: Tensor[(1, 3, 8, 8), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %c = nn.conv2d(%x, const(Tensor[(4, 3, 3, 3), float32], [-0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, -0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3]), padding=[1, 1, 1, 1])
  %r = nn.relu(%c)
  %e = exp(%r)
  return %e
}
)";

TEST_F(CliFiles, TwoRunsWritingOneProfileLeaveValidJson) {
  std::string model = file("m.kir", kNpuModel);
  ASSERT_EQ(kiln_cmd("compile " + model + " -b example_npu -o " + path("m.kmod")).code, 0);
  std::string profile = path("trace.json");
  std::string one = std::string(KILN_BINARY_DIR) + "/kiln run " + path("m.kmod") +
                    " --random-inputs 1 --profile " + profile + " --dispatch-log " + path("log.jsonl") +
                    " -o " + path("out") + " >/dev/null 2>&1";
  for (int round = 0; round < 10; ++round) {
    ASSERT_EQ(std::system(("(" + one + ") & (" + one + ") & wait").c_str()), 0);
    std::string text = testing::read_text(profile);
    EXPECT_NO_THROW(nlohmann::json::parse(text)) << "round " << round << ":\n" << text;
  }
  // Nothing but the outputs is left behind.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"log.jsonl", "m.kir", "m.kmod", "out", "trace.json"}));
  EXPECT_TRUE(std::filesystem::exists(path("out/output_0.npy")));
}

TEST_F(CliFiles, DevNullIsADestinationLikeAFile) {
  // A .npz beside /dev/null is what a side file of `-o /dev/null` would be.
  std::error_code ec;
  if (std::filesystem::is_regular_file("/dev/null.npz", ec)) std::filesystem::remove("/dev/null.npz", ec);
  std::string model = file("m.kir", kNpuModel);
  Result part =
      kiln_cmd("partition " + model + " -b example_npu -o /dev/null --report /dev/null --dot /dev/null");
  EXPECT_EQ(part.code, 0) << part.out;
  EXPECT_FALSE(std::filesystem::exists("/dev/null.npz"));
  Result compiled = kiln_cmd("compile " + model + " -o /dev/null");
  EXPECT_EQ(compiled.code, 0) << compiled.out;
  EXPECT_FALSE(has(compiled, "internal error")) << compiled.out;
  EXPECT_TRUE(has(compiled, "wrote /dev/null (")) << compiled.out;
  Result profiled = kiln_cmd("run " + model + " --random-inputs 1 --profile /dev/null");
  EXPECT_EQ(profiled.code, 0) << profiled.out;
  // A folder is not a file.
  Result folder = kiln_cmd("compile " + model + " -o " + dir_.string());
  EXPECT_EQ(folder.code, 1) << folder.out;
  EXPECT_TRUE(has(folder, "error: cannot write '" + dir_.string() + "': it is a folder")) << folder.out;
}

TEST_F(CliFiles, DevicesAndOversizedFilesAreRefusedBeforeReading) {
  for (const char* name : {"z.kir", "z.onnx", "z.npy"})
    std::filesystem::create_symlink("/dev/zero", dir_ / name);
  expect_error("run " + path("z.kir") + " --random-inputs 1", path("z.kir") + ": not a regular file");
  expect_error("run " + path("z.onnx") + " --random-inputs 1", path("z.onnx") + ": not a regular file");
  std::string model = file("m.kir",
                           "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
                           "  %y = nn.relu(%x)\n  return %y\n}\n");
  expect_error("run " + model + " --input x=" + path("z.npy"), path("z.npy") + ": not a regular file");
  expect_error("run " + model + " --input x=/dev/zero", "/dev/zero: not a regular file");
  setenv("KILN_MAX_FILE_BYTES", "16", 1);
  Result big = kiln_cmd("run " + model + " --random-inputs 1");
  unsetenv("KILN_MAX_FILE_BYTES");
  EXPECT_EQ(big.code, 1) << big.out;
  EXPECT_TRUE(has(big, "error: " + model + ": ")) << big.out;
  EXPECT_TRUE(has(big, "bytes, larger than the limit of 16 bytes (set KILN_MAX_FILE_BYTES to raise it)"))
      << big.out;
}

TEST_F(CliFiles, HugeInputsAreNamedBeforeAllocating) {
  std::string model =
      file("big.kir",
           "def @main(%x: Tensor[(100000, 100000), float32]) -> Tensor[(100000, 100000), float32] {\n"
           "  %y = nn.relu(%x)\n  return %y\n}\n");
  for (const char* how : {"", " --interpret"}) {
    Result r = kiln_cmd("run " + model + " --random-inputs 1" + how);
    EXPECT_EQ(r.code, 1) << how << "\n" << r.out;
    EXPECT_TRUE(has(r,
                    "error: input %x: (100000, 100000) float32 is 40000000000 bytes (37.25 GiB), larger than "
                    "the limit of 17179869184 bytes (16 GiB)"))
        << how << "\n"
        << r.out;
  }
}

TEST_F(CliFiles, ABadMagicNumberNamesTheFormatsKilnReads) {
  Result kmod = kiln_cmd("run " + file("bad.kmod", "not a module at all") + " --random-inputs 1");
  EXPECT_EQ(kmod.code, 1) << kmod.out;
  EXPECT_TRUE(has(kmod, "error: " + path("bad.kmod") + ": not a .kmod file (bad magic number)")) << kmod.out;
  Result other = kiln_cmd("run " +
                          file("model.bin",
                               "\x7f"
                               "ELF") +
                          " --random-inputs 1");
  EXPECT_EQ(other.code, 1) << other.out;
  EXPECT_TRUE(has(other, ".kir (kiln IR text) and .onnx models, and compiled .kmod modules")) << other.out;
}

TEST_F(CliFiles, InvalidUtf8InAStringIsAParseError) {
  std::string model = file("u.kir",
                           "module attrs {note = \"caf\xe9\"}\n"
                           "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
                           "  %y = nn.relu(%x)\n  return %y\n}\n");
  Result r = kiln_cmd("run " + model + " --random-inputs 1 -b example_npu");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "error: " + model + ":1:")) << r.out;
  EXPECT_TRUE(has(r, "invalid UTF-8 in string (byte 0xe9); save the file as UTF-8")) << r.out;
  EXPECT_FALSE(has(r, "json.exception")) << r.out;
}

}  // namespace
}  // namespace kiln
