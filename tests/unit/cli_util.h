// Runs the `kiln` binary of this build for CLI tests: its exit code and what
// it printed (stdout and stderr together).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace kiln::testing {

struct CliResult {
  int code = -1;     // exit code; 128 + signal when killed by one
  std::string out;   // stdout and stderr together
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

}  // namespace kiln::testing
