// The .kir text format: printer and parser for whole modules.
//
// Grammar: docs/ir.md. Printing then parsing gives a structurally equal
// module, and printing that again gives the same text.
//
// Constants with a name are written as references into the module's side
// file (an .npz next to the .kir); unnamed constants are written inline.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ir/ir.h"

namespace kiln {

using ConstantStore = std::map<std::string, Tensor>;

std::string print_module(const Module& m);
std::string print_function(const FunctionNode& f);
std::string print_expr(const Expr& e);  // one binding's value, for messages

// Parses a module. `filename` is used in error locations. Named constants are
// looked up in `side` (which may be null when the text has none). Errors are
// kiln::Error with file:line:col and, as context, the line and a caret.
Module parse_module(std::string_view text, const std::string& filename, const ConstantStore* side = nullptr);

// Files. load_module reads PATH and, when the text references named constants,
// the side file named by the module attribute `weights` (relative to PATH's
// folder), by default PATH with the extension .npz.
Module load_module(const std::string& path);
// Writes PATH and, when the module has named constants, the side file. Unnamed
// constants with more than `inline_limit` elements are given names first.
void save_module(const Module& m, const std::string& path, int64_t inline_limit = 16);

}  // namespace kiln
