// Text of prim functions: printer and parser (grammar in docs/ir.md).
//
// Printing then parsing gives a structurally equal function, and printing
// that again gives the same text. The parser runs on the shared lexer
// (ir/lexer.h), so `prim` functions sit in the same .kir files as graph
// functions.
#pragma once

#include <string>
#include <string_view>

#include "ir/lexer.h"
#include "tir/tir.h"

namespace kiln::tir {

std::string print_prim_func(const PrimFuncNode& f);
// The statements of a block at `indent` levels of two spaces.
std::string print_stmt(const Stmt& s, int indent = 0);
std::string print_expr(const Expr& e);
// "Buffer[(2048), int8, scope=\"local.vtcm\", align=128]"; the data variable is
// written when it is not the implicit NAME_data (or always, for decl_buffer).
std::string buffer_type_str(const BufferNode& b, bool always_print_data);

// Parses one `prim @name(...) { ... }` starting at the keyword `prim`.
// Errors are kiln::Error at the offending token, with the caret context.
PrimFunc parse_prim_function(Lexer& lex);
// A text holding prim functions only (tests, golden files).
std::vector<PrimFunc> parse_prim_functions(std::string_view text, const std::string& filename);

}  // namespace kiln::tir
