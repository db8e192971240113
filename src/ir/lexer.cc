#include "ir/lexer.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kiln {

const char* token_kind_name(TokenKind k) {
  switch (k) {
    case TokenKind::End:
      return "end of file";
    case TokenKind::Ident:
      return "identifier";
    case TokenKind::Local:
      return "%variable";
    case TokenKind::Global:
      return "@name";
    case TokenKind::Int:
      return "integer";
    case TokenKind::Float:
      return "float";
    case TokenKind::String:
      return "string";
    case TokenKind::LParen:
      return "'('";
    case TokenKind::RParen:
      return "')'";
    case TokenKind::LBracket:
      return "'['";
    case TokenKind::RBracket:
      return "']'";
    case TokenKind::LBrace:
      return "'{'";
    case TokenKind::RBrace:
      return "'}'";
    case TokenKind::Comma:
      return "','";
    case TokenKind::Colon:
      return "':'";
    case TokenKind::Semicolon:
      return "';'";
    case TokenKind::Equals:
      return "'='";
    case TokenKind::Arrow:
      return "'->'";
    case TokenKind::Dot:
      return "'.'";
    case TokenKind::Question:
      return "'?'";
    case TokenKind::Minus:
      return "'-'";
    case TokenKind::Plus:
      return "'+'";
    case TokenKind::Star:
      return "'*'";
    case TokenKind::Slash:
      return "'/'";
    case TokenKind::Percent:
      return "'%'";
    case TokenKind::Less:
      return "'<'";
    case TokenKind::Greater:
      return "'>'";
  }
  return "?";
}

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// A byte as messages show it: 'x', or '\x07' for unprintable ones.
std::string show_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static const char* hex = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

}  // namespace

Lexer::Lexer(std::string_view text, std::string filename) : text_(text), filename_(std::move(filename)) {}

const Token& Lexer::peek(size_t ahead) {
  while (lookahead_.size() <= ahead) {
    // Past the end, keep returning End without scanning again.
    if (!lookahead_.empty() && lookahead_.back().kind == TokenKind::End) return lookahead_.back();
    lookahead_.push_back(scan());
  }
  return lookahead_[ahead];
}

Token Lexer::next() {
  peek();
  Token t = std::move(lookahead_.front());
  lookahead_.erase(lookahead_.begin());
  return t;
}

bool Lexer::accept(TokenKind k) {
  if (!at(k)) return false;
  next();
  return true;
}

bool Lexer::accept_ident(std::string_view word) {
  if (!at_ident(word)) return false;
  next();
  return true;
}

Token Lexer::expect(TokenKind k, std::string_view what) {
  if (!at(k)) fail_expected(what);
  return next();
}

void Lexer::expect_ident(std::string_view word) {
  if (!at_ident(word)) fail_expected("'" + std::string(word) + "'");
  next();
}

std::string Lexer::describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::End:
      return "end of file";
    case TokenKind::Ident:
      return "identifier '" + t.text + "'";
    case TokenKind::Local:
      return "'%" + t.text + "'";
    case TokenKind::Global:
      return "'@" + t.text + "'";
    case TokenKind::Int:
    case TokenKind::Float:
      return "number " + t.text;
    case TokenKind::String:
      return "a string";
    default:
      return token_kind_name(t.kind);
  }
}

void Lexer::fail_expected(std::string_view what) {
  const Token& t = peek();
  if (t.kind == TokenKind::End) throw error_at(t, "unexpected end of file: expected " + std::string(what));
  throw error_at(t, "expected " + std::string(what) + ", found " + describe(t));
}

std::string Lexer::context(int line, int column) const {
  if (line <= 0) return {};
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = text_.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = text_.find('\n', start);
  if (end == std::string_view::npos) end = text_.size();
  std::string_view src = text_.substr(start, end - start);
  if (!src.empty() && src.back() == '\r') src.remove_suffix(1);
  size_t col = column > 0 ? static_cast<size_t>(column - 1) : 0;
  // Long lines (minified or fuzzed input) are shown as a window around the column.
  constexpr size_t kWindow = 60;
  size_t from = col > kWindow ? col - kWindow : 0;
  size_t to = std::min(src.size(), col + kWindow);
  std::string shown, caret;
  if (from > 0) shown += "...";
  for (size_t i = from; i < to; ++i) {
    char c = src[i];
    bool printable = c == '\t' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
    shown += printable ? c : '?';
  }
  if (to < src.size()) shown += "...";
  if (from > 0) caret += "   ";
  // Copy tabs so the caret lines up under a tab-indented line.
  for (size_t i = from; i < col && i < src.size(); ++i) caret += src[i] == '\t' ? '\t' : ' ';
  for (size_t i = src.size(); i < col; ++i) caret += ' ';
  return shown + "\n" + caret + "^";
}

Error Lexer::error_at(const SourceLoc& loc, const std::string& message) const {
  return Error(message, loc, context(loc.line, loc.column));
}

Error Lexer::error_at(const Token& t, const std::string& message) const { return error_at(loc(t), message); }

Error Lexer::error_here(size_t, int line, int column, const std::string& message) const {
  return error_at(SourceLoc{filename_, line, column}, message);
}

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && pos_ < text_.size(); ++i) {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
}

void Lexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance(1);
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') advance(1);
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      int line = line_, column = column_;
      size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos)
        throw error_here(pos_, line, column, "unterminated comment: '/*' without a closing '*/'");
      advance(close + 2 - pos_);
    } else {
      return;
    }
  }
}

std::string Lexer::scan_name(Token& t, char sigil) {
  // After the sigil: a plain name, or a quoted one for names with other characters.
  if (pos_ < text_.size() && text_[pos_] == '"') {
    std::string value;
    scan_string(t, value);
    if (value.empty())
      throw error_here(t.offset, t.line, t.column, std::string("empty name after '") + sigil + "'");
    return value;
  }
  size_t start = pos_;
  // Globals may contain dots (backend symbol names such as example_npu.conv2d_0);
  // locals may not, since %t.0 selects a tuple field.
  while (pos_ < text_.size() && (is_ident_char(text_[pos_]) || (sigil == '@' && text_[pos_] == '.')))
    advance(1);
  if (start == pos_)
    throw error_here(t.offset, t.line, t.column, std::string("expected a name after '") + sigil + "'");
  return std::string(text_.substr(start, pos_ - start));
}

// The length of the UTF-8 sequence at text[pos] (whose first byte is not
// ASCII), or 0 when it is not valid UTF-8 (a stray continuation byte, a
// truncated or overlong sequence, a surrogate, past U+10FFFF).
static std::string hex_byte(uint8_t v) {
  const char* digits = "0123456789abcdef";
  return {digits[v >> 4], digits[v & 15]};
}

static size_t utf8_length(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return pos + i < text.size() ? static_cast<uint8_t>(text[pos + i]) : 0; };
  uint8_t b0 = byte(0);
  size_t n = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
  for (size_t i = 1; i < n; ++i)
    if ((byte(i) & 0xC0) != 0x80) return 0;
  uint8_t b1 = byte(1);
  if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 >= 0xA0) || (b0 == 0xF0 && b1 < 0x90) ||
      (b0 == 0xF4 && b1 >= 0x90))
    return 0;
  return n;
}

Token Lexer::scan_string(Token t, std::string& out) {
  // pos_ is at the opening quote.
  advance(1);
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n')
      throw error_here(t.offset, t.line, t.column, "unterminated string: missing closing '\"'");
    char c = text_[pos_];
    if (c == '"') {
      advance(1);
      break;
    }
    if (c == '\\') {
      if (pos_ + 1 >= text_.size())
        throw error_here(t.offset, t.line, t.column, "unterminated string: missing closing '\"'");
      char e = text_[pos_ + 1];
      char v;
      switch (e) {
        case '"':
          v = '"';
          break;
        case '\\':
          v = '\\';
          break;
        case 'n':
          v = '\n';
          break;
        case 't':
          v = '\t';
          break;
        default:
          throw error_here(
              pos_, line_, column_,
              "unknown escape '\\" + std::string(1, e) + "' in string (known: \\\" \\\\ \\n \\t)");
      }
      out += v;
      advance(2);
      continue;
    }
    if (static_cast<uint8_t>(c) >= 0x80) {
      // Strings end up in JSON (backend graphs, reports), which must be UTF-8.
      size_t n = utf8_length(text_, pos_);
      if (n == 0)
        throw error_here(pos_, line_, column_,
                         "invalid UTF-8 in string (byte 0x" + hex_byte(static_cast<uint8_t>(c)) +
                             "); save the file as UTF-8");
      out.append(text_.substr(pos_, n));
      advance(n);
      continue;
    }
    out += c;
    advance(1);
  }
  t.end_offset = pos_;
  return t;
}

Token Lexer::scan_number(Token t) {
  size_t start = pos_;
  bool is_float = false;
  if (text_[pos_] == '-') advance(1);
  while (pos_ < text_.size() && is_digit(text_[pos_])) advance(1);
  if (pos_ < text_.size() && text_[pos_] == '.') {
    is_float = true;
    advance(1);
    if (pos_ >= text_.size() || !is_digit(text_[pos_]))
      throw error_here(
          t.offset, t.line, t.column,
          "bad number '" + std::string(text_.substr(start, pos_ - start)) + "': expected digits after '.'");
    while (pos_ < text_.size() && is_digit(text_[pos_])) advance(1);
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    is_float = true;
    advance(1);
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) advance(1);
    if (pos_ >= text_.size() || !is_digit(text_[pos_]))
      throw error_here(t.offset, t.line, t.column,
                       "bad number '" + std::string(text_.substr(start, pos_ - start)) +
                           "': expected digits in the exponent");
    while (pos_ < text_.size() && is_digit(text_[pos_])) advance(1);
  }
  // "12abc" or "1.5.2" is one bad word, not a number followed by something.
  if (pos_ < text_.size() && (is_ident_char(text_[pos_]) || text_[pos_] == '.')) {
    size_t end = pos_;
    while (end < text_.size() && (is_ident_char(text_[end]) || text_[end] == '.')) ++end;
    throw error_here(t.offset, t.line, t.column,
                     "bad number '" + std::string(text_.substr(start, end - start)) + "'");
  }
  t.text = std::string(text_.substr(start, pos_ - start));
  t.end_offset = pos_;
  if (is_float) {
    t.kind = TokenKind::Float;
    // strtod rather than from_chars: it returns denormals instead of an error.
    errno = 0;
    double v = std::strtod(t.text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(v))
      throw error_here(t.offset, t.line, t.column,
                       "float " + t.text + " is out of range (write inf for infinity)");
    t.float_value = v;
    return t;
  }
  t.kind = TokenKind::Int;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc() || ptr != t.text.data() + t.text.size())
    throw error_here(t.offset, t.line, t.column, "integer " + t.text + " is out of range for int64");
  t.int_value = v;
  t.float_value = static_cast<double>(v);
  return t;
}

Token Lexer::scan() {
  skip_space_and_comments();
  Token t;
  t.line = line_;
  t.column = column_;
  t.offset = pos_;
  if (pos_ >= text_.size()) {
    t.kind = TokenKind::End;
    t.end_offset = pos_;
    return t;
  }
  char c = text_[pos_];
  char c1 = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
  if (is_ident_start(c)) {
    size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) advance(1);
    t.kind = TokenKind::Ident;
    t.text = std::string(text_.substr(start, pos_ - start));
    t.end_offset = pos_;
    return t;
  }
  if (is_digit(c) || (c == '-' && is_digit(c1))) return scan_number(t);
  if (c == '"') {
    t.kind = TokenKind::String;
    std::string value;
    t = scan_string(t, value);
    t.text = std::move(value);
    return t;
  }
  if ((c == '%' || c == '@') && (is_ident_char(c1) || c1 == '"')) {
    advance(1);
    t.kind = c == '%' ? TokenKind::Local : TokenKind::Global;
    t.text = scan_name(t, c);
    t.end_offset = pos_;
    return t;
  }
  if (c == '-' && c1 == '>') {
    advance(2);
    t.kind = TokenKind::Arrow;
    t.text = "->";
    t.end_offset = pos_;
    return t;
  }
  TokenKind k;
  switch (c) {
    case '(':
      k = TokenKind::LParen;
      break;
    case ')':
      k = TokenKind::RParen;
      break;
    case '[':
      k = TokenKind::LBracket;
      break;
    case ']':
      k = TokenKind::RBracket;
      break;
    case '{':
      k = TokenKind::LBrace;
      break;
    case '}':
      k = TokenKind::RBrace;
      break;
    case ',':
      k = TokenKind::Comma;
      break;
    case ':':
      k = TokenKind::Colon;
      break;
    case ';':
      k = TokenKind::Semicolon;
      break;
    case '=':
      k = TokenKind::Equals;
      break;
    case '.':
      k = TokenKind::Dot;
      break;
    case '?':
      k = TokenKind::Question;
      break;
    case '-':
      k = TokenKind::Minus;
      break;
    case '+':
      k = TokenKind::Plus;
      break;
    case '*':
      k = TokenKind::Star;
      break;
    case '/':
      k = TokenKind::Slash;
      break;
    case '%':
      k = TokenKind::Percent;
      break;
    case '<':
      k = TokenKind::Less;
      break;
    case '>':
      k = TokenKind::Greater;
      break;
    case '@':
      throw error_here(pos_, line_, column_, "expected a name after '@'");
    default:
      throw error_here(pos_, line_, column_, "unexpected character " + show_byte(c));
  }
  advance(1);
  t.kind = k;
  t.text = std::string(1, c);
  t.end_offset = pos_;
  return t;
}

}  // namespace kiln
