// Where the commands that produce a module (import, partition, opt) write it.
#pragma once

#include <string>

#include "ir/ir.h"

namespace kiln::cli {

// "": the module's text on standard output, to read (named constants appear
// by name, as references into the side file). "-": the same with every
// constant inline, so that the text parses back on its own (a pipe has no
// folder for a side file). Otherwise save_module: PATH and, for named constants, PATH's .npz
// (the module attribute `weights` is set to that name, never kept from an
// input module, whose weights file it would overwrite).
void write_module_output(const Module& m, const std::string& path, int64_t inline_limit = 16);

}  // namespace kiln::cli
