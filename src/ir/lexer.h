// Tokenizer for kiln's text formats (.kir graph functions, and later the
// tensor-level `prim` functions in the same files).
//
// The lexer knows tokens, not grammar: identifiers, %locals, @globals,
// numbers, strings and punctuation, each with its line and column. Comments
// (`# ...` to the end of the line, and `/* ... */`) and whitespace are
// skipped. Tokens are produced on demand, so an error is reported where the
// parser reaches it, in source order. A Lexer is a small value (a view of the
// text plus a position): copy it to remember a position and come back later,
// e.g. to parse function bodies after all signatures are known.
//
// Every error is a kiln::Error with file:line:col and, as context, the
// offending source line with a caret under the column (see error_at).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/error.h"

namespace kiln {

enum class TokenKind : uint8_t {
  End,        // end of input
  Ident,      // [A-Za-z_][A-Za-z0-9_]*; dotted names are Ident '.' Ident (see Lexer::adjacent)
  Local,      // %name or %"any text"; text is the name without '%'
  Global,     // @name or @"any text"; text is the name without '@'
  Int,        // 12, -3 (a '-' directly before a digit belongs to the number)
  Float,      // 1.5, -2e-3, 1e10 (has a '.' or an exponent)
  String,     // "..." with escapes \" \\ \n \t; text is the unescaped value
  LParen,     // (
  RParen,     // )
  LBracket,   // [
  RBracket,   // ]
  LBrace,     // {
  RBrace,     // }
  Comma,      // ,
  Colon,      // :
  Semicolon,  // ;
  Equals,     // =
  Arrow,      // ->
  Dot,        // .
  Question,   // ?
  Minus,      // - (not followed by a digit or '>')
  Plus,       // +
  Star,       // *
  Slash,      // /
  Percent,    // % (not followed by a name)
  Less,       // <
  Greater,    // >
};

// "identifier", "'('", "end of file", ... for messages.
const char* token_kind_name(TokenKind k);

struct Token {
  TokenKind kind = TokenKind::End;
  // Ident: the identifier; Local/Global: the name without its sigil; String:
  // the unescaped value; Int/Float: the spelling; punctuation: its spelling.
  std::string text;
  int64_t int_value = 0;   // Int
  double float_value = 0;  // Int and Float (an Int is also a valid float)
  int line = 0;            // 1-based
  int column = 0;          // 1-based, in bytes
  size_t offset = 0;       // byte offset of the first character
  size_t end_offset = 0;   // byte offset just past the last character

  bool is(TokenKind k) const { return kind == k; }
  bool is_ident(std::string_view word) const { return kind == TokenKind::Ident && text == word; }
};

class Lexer {
 public:
  // `text` must outlive the lexer (and its copies). `filename` is used in
  // error locations.
  Lexer(std::string_view text, std::string filename);

  // The token `ahead` tokens from the current one (0: the current one).
  const Token& peek(size_t ahead = 0);
  // Consumes and returns the current token.
  Token next();
  bool at(TokenKind k) { return peek().kind == k; }
  bool at_ident(std::string_view word) { return peek().is_ident(word); }
  // Consumes the current token when it is of kind k (or the identifier word).
  bool accept(TokenKind k);
  bool accept_ident(std::string_view word);
  // Consumes a token of kind k, or throws "expected <what>, found <token>".
  Token expect(TokenKind k, std::string_view what);
  void expect_ident(std::string_view word);

  // True when b starts right where a ends (no space or comment between):
  // `nn.conv2d` versus `nn . conv2d`.
  static bool adjacent(const Token& a, const Token& b) { return a.end_offset == b.offset; }

  SourceLoc loc(const Token& t) const { return SourceLoc{filename_, t.line, t.column}; }
  // The source line of (line, column) and a caret line under the column.
  std::string context(int line, int column) const;
  // An Error at the token / location, with the caret context.
  Error error_at(const Token& t, const std::string& message) const;
  Error error_at(const SourceLoc& loc, const std::string& message) const;
  // "expected <what>, found <description of the current token>".
  [[noreturn]] void fail_expected(std::string_view what);
  // A short description of a token for messages: "identifier 'foo'", "'('", "end of file".
  static std::string describe(const Token& t);

  const std::string& filename() const { return filename_; }
  std::string_view text() const { return text_; }

 private:
  Token scan();  // the next token from pos_
  void skip_space_and_comments();
  Token scan_number(Token t);
  Token scan_string(Token t, std::string& out);
  std::string scan_name(Token& t, char sigil);
  Error error_here(size_t offset, int line, int column, const std::string& message) const;
  void advance(size_t n);

  std::string_view text_;
  std::string filename_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  std::vector<Token> lookahead_;  // tokens scanned but not consumed, in order
};

}  // namespace kiln
