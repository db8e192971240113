// Compiling a test model for a named CPU with every stage printed.
#pragma once

#include <sstream>
#include <string>

#include "codegen/target.h"
#include "driver/compile_model.h"

namespace kiln::testing {

// `m` compiled for `cpu` (empty: this machine's; else as
// `--target "llvm -mcpu=CPU"`), what --print-after-all prints going to
// `*printed`.
inline Executable compile_printed(const Module& m, const std::string& cpu, std::string* printed) {
  driver::CompileOptions o;
  if (!cpu.empty()) o.target = codegen::parse_target("llvm -mcpu=" + cpu);
  std::ostringstream log;
  o.print_after_all = true;
  o.log = &log;
  Executable exe = driver::compile_model(m, o);
  *printed = log.str();
  return exe;
}

}  // namespace kiln::testing
