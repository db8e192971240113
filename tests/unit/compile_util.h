// Compiling a test model for a named CPU with every stage printed.
#pragma once

#include <gtest/gtest.h>

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

// Every element of every output within `tolerance` of the reference's.
inline void expect_outputs_near(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(got[r].shape(), want[r].shape()) << "output " << r;
    for (int64_t i = 0; i < want[r].numel(); ++i)
      ASSERT_NEAR(got[r].get_as_double(i), want[r].get_as_double(i), tolerance)
          << "output " << r << " element " << i;
  }
}

}  // namespace kiln::testing
