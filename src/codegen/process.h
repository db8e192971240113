// Running the external tools codegen drives (ld.lld-19, qemu-hexagon-static):
// argv without a shell, output captured, a time limit so an emulated program
// that never ends cannot hang kiln. Plain C++; no LLVM.
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

struct ProcessResult {
  int exit_code = -1;  // the program's status; -1 when it was killed or did not start
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs argv[0] (looked up in PATH). A program that cannot be started is a
// kiln::Error naming it and `hint` (how to install it).
ProcessResult run_process(const std::vector<std::string>& argv, int timeout_seconds,
                          const std::string& hint = "");
// argv[0] found in PATH.
bool program_exists(const std::string& name);

}  // namespace kiln::codegen
