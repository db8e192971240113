// Runs the `kiln` binary of this build for CLI tests: its exit code and what
// it printed (stdout and stderr together).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kiln::testing {

struct CliResult {
  int code = -1;    // exit code; 128 + signal when killed by one
  std::string out;  // stdout and stderr together
};

inline CliResult kiln_cmd(const std::string& args) {
  std::string cmd = std::string(KILN_BINARY_DIR) + "/kiln " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The whole file, or "" when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A fixture with a fresh scratch folder per test: BUILD/<group>/<test name>.
class CliTest : public ::testing::Test {
 protected:
  explicit CliTest(std::string group) : group_(std::move(group)) {}
  void SetUp() override {
    dir_ = std::filesystem::path(KILN_BINARY_DIR) / group_ /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  // Writes `text` to a file in the scratch folder and returns its path.
  std::string file(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;

 private:
  std::string group_;
};

}  // namespace kiln::testing
